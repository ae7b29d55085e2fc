package volume

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter/colfiltertest"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// The volume's row filter keeps exactly the candidates predicate.Eval
// (IEEE) finds TRUE — over random predicates on generated columns of
// every kernel's type, each split into chunks at random places (the
// evaluation windows end at chunk boundaries), on every row or a
// scattered subset of them, with and without a LIMIT (then exactly the
// first matches, in row order).
func TestTheVolumesRowFilterKeepsExactlyTheCandidatesRowWiseEvalFindsTrue(t *testing.T) {
	for seed := int64(0); seed < 600; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(9000) + 1
		if rng.Intn(2) == 0 {
			n = rng.Intn(60) + 1
		}
		gens := make([]colfiltertest.Column, rng.Intn(3)+1)
		cols := map[int]*chunkedColumn{}
		types := map[int]iceberg.Type{}
		for i := range gens {
			gens[i] = colfiltertest.Array(rng, rng.Intn(colfiltertest.Kinds), n)
			var chunks []arrow.Array
			for at := 0; at < n; {
				end := min(n, at+1+rng.Intn(max(1, n/2)))
				chunks = append(chunks, array.NewSlice(gens[i].Arr, int64(at), int64(end)))
				at = end
			}
			cols[i+1], types[i+1] = newChunkedColumn(chunks), gens[i].Type
		}
		var rows []int64
		if rng.Intn(2) == 0 {
			for r := int64(0); r < int64(n); r++ {
				if rng.Intn(3) != 0 {
					rows = append(rows, r)
				}
			}
		}
		e := colfiltertest.Expr(rng, gens, 3)
		vf := &vectorFilter{e: e}
		if rng.Intn(3) == 0 {
			vf.stopAfter = int64(rng.Intn(50) + 1)
		}
		const first = 1000
		got := roaring64.New()
		if err := selectCandidates(vf, cols, types, int64(n), first, rows, got); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, e, err)
		}
		want := roaring64.New()
		for r := int64(0); r < int64(n); r++ {
			if rows != nil && !containsRow(rows, r) {
				continue
			}
			if vf.stopAfter > 0 && int64(want.GetCardinality()) >= vf.stopAfter {
				break
			}
			row := func(id int) (value.Value, bool) {
				v, null, err := colfiltertest.RowValue(gens[id-1], int(r))
				if err != nil {
					t.Fatalf("seed %d: oracle: %v", seed, err)
				}
				return v, null
			}
			if predicate.Eval(e, row, predicate.IEEE) == predicate.True {
				want.Add(uint64(first + r))
			}
		}
		if !got.Equals(want) {
			t.Fatalf("seed %d: %s on %d rows (candidates %d, stop after %d):\nvolume   %v\nrow-wise %v", seed, e, n, len(rows), vf.stopAfter, got.ToArray(), want.ToArray())
		}
		for _, g := range gens {
			g.Arr.Release()
		}
	}
}

func containsRow(rows []int64, r int64) bool {
	for _, x := range rows {
		if x == r {
			return true
		}
	}
	return false
}

// A value that does not convert to the field's type fails the
// evaluation with FAILED_PRECONDITION naming the field, as the row-wise
// evaluation did.
func TestAValueThatDoesNotConvertFailsTheRowFilterNamingTheField(t *testing.T) {
	b := array.NewDurationBuilder(memory.DefaultAllocator, &arrow.DurationType{Unit: arrow.Second})
	b.AppendValues([]arrow.Duration{1, 2, 3}, nil)
	arr := b.NewArray()
	defer arr.Release()
	// a duration column: no kernel, value.FromArrow refuses it
	e := &predicate.Leaf{FieldID: 7, Op: predicate.OpEq, Lits: []value.Value{value.OfInt(2)}}
	vf := &vectorFilter{e: e}
	err := selectCandidates(vf, map[int]*chunkedColumn{7: newChunkedColumn([]arrow.Array{arr})},
		map[int]iceberg.Type{7: iceberg.PrimitiveTypes.Int64}, 3, 0, nil, roaring64.New())
	if perr.KindOf(err) != perr.FailedPrecondition || err == nil || !bytes.Contains([]byte(err.Error()), []byte("field 7")) {
		t.Fatalf("error %v (kind %v), want FAILED_PRECONDITION naming field 7", err, perr.KindOf(err))
	}
}
