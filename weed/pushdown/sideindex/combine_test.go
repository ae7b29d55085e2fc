package sideindex_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// NOT reaches the leaves at binding (De Morgan); a candidate index asked a
// negated leaf must then say "unknown", never the complement of its
// candidates. Random trees of NOT/AND/OR over leaves answered by ngram
// (candidates) and bitmap (exact) indexes, combined as the catalog does,
// keep every matching row, and are exact only when they are.
func TestNegationsOverCandidateSetsNeverDropARow(t *testing.T) {
	ctx := context.Background()
	f := sideindex.NewTestFile(t, 2000)
	indexes := map[int]sideindex.Index{}
	for id, name := range map[int]string{8: "ngram", 1: "bitmap", 9: "bloom"} {
		k, _ := sideindex.Lookup(name)
		in := f.Input(t, id, nil)
		p, err := k.Build(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if indexes[id], err = k.Open(ctx, p, sideindex.WantOf(in, k.Name())); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(13, 17))
	var tree func(depth int) predicate.Expr
	tree = func(depth int) predicate.Expr {
		if depth == 0 || r.IntN(3) == 0 {
			ids := []int{8, 8, 1, 9}
			id := ids[r.IntN(len(ids))]
			field, _ := f.Schema().FindFieldByID(id)
			for {
				if l := sideindex.RandomLeaf(r, f.Schema(), field, f.Oracle().Cols[id]); l != nil {
					return l
				}
			}
		}
		switch r.IntN(3) {
		case 0:
			return predicate.Not{Kid: tree(depth - 1)}
		case 1:
			return predicate.And{Kids: []predicate.Expr{tree(depth - 1), tree(depth - 1)}}
		}
		return predicate.Or{Kids: []predicate.Expr{tree(depth - 1), tree(depth - 1)}}
	}
	n, known, exact := 400, 0, 0
	if testing.Short() {
		n = 100
	}
	for i := 0; i < n; i++ {
		e, err := predicate.Bind(tree(3), f.Schema(), predicate.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		ans := indexing.CombineExact(e, func(l *predicate.Leaf) indexing.Answer {
			a, err := indexes[l.FieldID].Eval(ctx, l)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return indexing.Answer{Unknown: a.Unknown, Exact: a.Exact, Positions: a.Positions}
		})
		if ans.Unknown {
			continue
		}
		known++
		want := roaring64.New()
		for _, p := range f.Oracle().Matching(e) {
			want.Add(uint64(p))
		}
		if missed := roaring64.AndNot(want, ans.Positions); !missed.IsEmpty() {
			t.Fatalf("%s: the combined answer misses %d matching rows, e.g. row %d", e, missed.GetCardinality(), missed.Minimum())
		}
		if ans.Exact {
			exact++
			if !ans.Positions.Equals(want) {
				t.Fatalf("%s: answered exact with %d rows, %d match", e, ans.Positions.GetCardinality(), want.GetCardinality())
			}
		}
	}
	t.Logf("%d trees: %d answered, %d exactly", n, known, exact)
	if known == 0 || exact == 0 || exact == known {
		t.Fatalf("%d of %d trees answered, %d exactly: the test does not exercise candidates and exact answers together", known, n, exact)
	}
}
