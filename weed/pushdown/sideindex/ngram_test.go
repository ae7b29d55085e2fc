package sideindex

import (
	"context"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

func TestNgramFoldsCaseOfNonASCIIText(t *testing.T) {
	ctx := context.Background()
	f := generatedFiles(t, 2000)[0]
	in := f.input(t, 8, nil)
	p, err := ngramKind{}.Build(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ngramKind{}.Open(ctx, p, wantOf(in, "ngram"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"%zürich%", "%ZÜRICH%", "%KELVIN%", "%東京都%", "%TIMEOUT%"} {
		for _, op := range []predicate.Op{predicate.OpILike, predicate.OpLike} {
			e, err := predicate.Bind(&predicate.Leaf{FieldID: 8, Op: op, Raw: likeRaw(pat)}, f.schema, predicate.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			l := e.(*predicate.Leaf)
			ans, err := idx.Eval(ctx, l)
			if err != nil || ans.Unknown {
				t.Fatalf("%s: %v %v", l, ans, err)
			}
			want := f.df.Matching(l)
			if op == predicate.OpILike && len(want) == 0 {
				t.Fatalf("%s matches no row: the data does not exercise folding", l)
			}
			for _, w := range want {
				if !ans.Positions.Contains(uint64(w)) {
					t.Fatalf("%s misses row %d", l, w)
				}
			}
			if ans.Positions.GetCardinality() >= uint64(f.df.Rows) {
				t.Fatalf("%s pruned nothing", l)
			}
		}
	}
}
