package sideindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// diffStats counts what a differential run saw.
type diffStats struct {
	leaves, unknown, exact, pruned int
}

// generatedFiles writes every layout once (the same rows in each).
func generatedFiles(t testing.TB, rows int64) []*testFile {
	t.Helper()
	return generatedFilesOf(t, testCols(), rows)
}

func generatedFilesOf(t testing.TB, cols []testCol, rows int64) []*testFile {
	t.Helper()
	_, s := schemasOf(cols)
	var out []*testFile
	for i, lay := range layouts {
		out = append(out, loadFile(t, fmt.Sprintf("s3://b/t/data/%d.parquet", i), writeFile(t, cols, lay, rows, 7), s))
	}
	return out
}

// checkKindAgainstOracle builds kind k on every supported column of every
// file and checks leavesPerColumn random leaves: no matching row is ever
// missing, and an exact answer is exactly the matching rows.
func checkKindAgainstOracle(t *testing.T, k Kind, params map[string]string, leavesPerColumn int, files []*testFile) diffStats {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(2026, uint64(len(k.Name()))))
	var st diffStats
	for fi, f := range files {
		for _, field := range f.schema.Fields() {
			if !k.Supports(field.Type) {
				continue
			}
			in := f.input(t, field.ID, params)
			payload, err := k.Build(ctx, in)
			if err != nil {
				t.Fatalf("%s: file %d field %s: build: %v", k.Name(), fi, field.Name, err)
			}
			idx, err := k.Open(ctx, payload, wantOf(in, k.Name()))
			if err != nil {
				t.Fatalf("%s: file %d field %s: open: %v", k.Name(), fi, field.Name, err)
			}
			cells := f.df.Cols[field.ID]
			for n := 0; n < leavesPerColumn; n++ {
				l := randomLeaf(r, f.schema, field, cells)
				if l == nil {
					continue
				}
				st.leaves++
				ans, err := idx.Eval(ctx, l)
				if err != nil {
					t.Fatalf("%s: file %d: %s: eval: %v", k.Name(), fi, l, err)
				}
				if ans.Unknown {
					st.unknown++
					continue
				}
				want := roaring64.New()
				for _, p := range f.df.Matching(l) {
					want.Add(uint64(p))
				}
				if missed := roaring64.AndNot(want, ans.Positions); !missed.IsEmpty() {
					p := missed.Minimum()
					t.Fatalf("%s: file %d (%s): %s misses %d matching rows, e.g. row %d = %#v",
						k.Name(), fi, layouts[fi].name, l, missed.GetCardinality(), p, f.df.Cols[field.ID][p])
				}
				if ans.Exact {
					st.exact++
					if !ans.Positions.Equals(want) {
						extra := roaring64.AndNot(ans.Positions, want)
						p := extra.Minimum()
						t.Fatalf("%s: file %d: %s answered exact with %d rows that do not match, e.g. row %d = %#v",
							k.Name(), fi, l, extra.GetCardinality(), p, f.df.Cols[field.ID][p])
					}
				}
				if ans.Positions.GetCardinality() < uint64(f.df.Rows) {
					st.pruned++
				}
				// The answer is the caller's own (the volume cuts it in
				// place for a LIMIT): emptying it changes no later answer.
				ans.Positions.Clear()
				if again, err := idx.Eval(ctx, l); err != nil || (!again.Unknown && !roaring64.AndNot(want, again.Positions).IsEmpty()) {
					t.Fatalf("%s: file %d: %s: once its first answer was emptied, the next misses rows (%v)", k.Name(), fi, l, err)
				}
			}
		}
	}
	t.Logf("%s: %d leaves, %d unknown, %d exact, %d pruned some rows", k.Name(), st.leaves, st.unknown, st.exact, st.pruned)
	return st
}

// leafString keeps test messages short.
var _ = predicate.OpEq

func TestBtreeAnswersEveryLeafWithExactlyTheMatchingRows(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	st := checkKindAgainstOracle(t, btreeKind{}, map[string]string{"rows_per_group": "257"}, n, generatedFiles(t, 3000))
	if st.unknown != 0 || st.exact != st.leaves {
		t.Fatalf("btree left %d of %d leaves unknown and answered %d exactly; want every leaf exact", st.unknown, st.leaves, st.exact)
	}
}

func TestBloomNeverMissesARowAndAnswersOnlyEqualityAndIn(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	st := checkKindAgainstOracle(t, bloomKind{}, nil, n, generatedFiles(t, 3000))
	if st.exact != 0 {
		t.Fatalf("bloom answered %d leaves as exact; a bloom only gives candidates", st.exact)
	}
	if st.pruned == 0 {
		t.Fatalf("bloom never pruned a row group: the test does not exercise it")
	}
}

func TestBitmapAnswersEveryLeafWithExactlyTheMatchingRows(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	st := checkKindAgainstOracle(t, bitmapKind{}, nil, n, generatedFiles(t, 3000))
	if st.unknown != 0 || st.exact != st.leaves {
		t.Fatalf("bitmap left %d of %d leaves unknown and answered %d exactly; want every leaf exact", st.unknown, st.leaves, st.exact)
	}
	if st.pruned == 0 {
		t.Fatalf("bitmap never pruned a row: the test does not exercise it")
	}
}

func TestBitmapBuildRefusesAColumnOverItsDistinctCapNamingTheCount(t *testing.T) {
	f := generatedFiles(t, 3000)[0]
	in := f.input(t, 3, map[string]string{"max_distinct": "100"}) // "sorted": 3000 distinct values but NULLs
	_, err := bitmapKind{}.Build(context.Background(), in)
	if err == nil {
		t.Fatalf("a column of ~3000 distinct values was indexed under max_distinct=100")
	}
	distinct := map[string]bool{}
	for _, c := range f.df.Cols[3] {
		if !c.Null {
			distinct[c.V.String()] = true
		}
	}
	if want := fmt.Sprintf("has %d distinct values, over max_distinct=100", len(distinct)); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestNgramNeverMissesARowAndKnowsOnlyPatternsWithATrigram(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	st := checkKindAgainstOracle(t, ngramKind{}, nil, n, generatedFiles(t, 3000))
	if st.exact != 0 {
		t.Fatalf("ngram answered %d leaves as exact; it only gives candidates", st.exact)
	}
	if st.pruned == 0 || st.unknown == 0 || st.unknown == st.leaves {
		t.Fatalf("ngram pruned %d and left %d of %d leaves unknown: the test does not exercise it", st.pruned, st.unknown, st.leaves)
	}
}

func TestLabelListAnswersArrayContainsWithExactlyTheMatchingRows(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	st := checkKindAgainstOracle(t, labelListKind{}, nil, n, generatedFilesOf(t, listCols(), 3000))
	if st.unknown != 0 || st.exact != st.leaves || st.pruned == 0 {
		t.Fatalf("label_list: %d of %d leaves unknown, %d exact, %d pruned; want every leaf exact and some pruned", st.unknown, st.leaves, st.exact, st.pruned)
	}
}
