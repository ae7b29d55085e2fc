package colfilter_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter/colfiltertest"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// The vectorized residual selects exactly the rows predicate.Eval (IEEE)
// finds TRUE, over random predicates (three-valued And/Or/Not, negated
// leaves, IN, IS NULL, IS NAN, STARTS_WITH, constants, residuals) on
// generated arrays of every kernel's type — NULLs, NaN, ±0, ±Inf, empty
// and non-UTF-8 strings, decimals with literals at other scales,
// timestamps of every unit read as micro- and nanoseconds, dictionaries —
// and on candidates that are a scattered subset of the array.
func TestVectorizedResidualSelectsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		cols := make([]colfiltertest.Column, rng.Intn(3)+1)
		for i := range cols {
			cols[i] = colfiltertest.Array(rng, rng.Intn(colfiltertest.Kinds), n)
		}
		// candidates: a random ascending subset of the positions
		var pos []int32
		for p := 0; p < n; p++ {
			if rng.Intn(4) != 0 {
				pos = append(pos, int32(p))
			}
		}
		e := colfiltertest.Expr(rng, cols, 3)
		b := &colfilter.Batch{N: len(pos), Vector: func(id int) *colfilter.Vector {
			return &colfilter.Vector{Type: cols[id-1].Type, Arr: cols[id-1].Arr, Pos: pos, ErrAt: func(i int, err error) error { return err }}
		}}
		got, err := (&colfilter.Filter{Expr: e}).SelectRows(b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, e, err)
		}
		var want []int32
		for i, p := range pos {
			row := func(id int) (value.Value, bool) { return rowWiseValue(t, seed, cols[id-1], int(p)) }
			if predicate.Eval(e, row, predicate.IEEE) == predicate.True {
				want = append(want, int32(i))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			vals := ""
			for i := range cols {
				vals += fmt.Sprintf("\n  field %d (%s as %s): %v", i+1, cols[i].Arr.DataType(), cols[i].Type, cols[i].Arr)
			}
			t.Fatalf("seed %d: %s over positions %v:%s\nvectorized %v\nrow-wise   %v", seed, e, pos, vals, got, want)
		}
		for _, c := range cols {
			c.Arr.Release()
		}
	}
}

// The filter's in-place test of one leaf over a whole column (the dense
// shortcut) keeps exactly the positions predicate.Eval (IEEE) finds TRUE,
// over random leaves on generated arrays of every kernel's type (NULLs,
// NaN, ±0, negation, IN, IS NULL, dictionaries).
func TestOneLeafTestedInPlaceKeepsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	applied := 0
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		g := colfiltertest.Array(rng, rng.Intn(colfiltertest.Kinds), n)
		l := colfiltertest.Leaf(rng, 1, g)
		got, ok := colfilter.LeafRowsOf(l, g.Type, g.Arr)
		if ok {
			applied++
			var want []int64
			for p := 0; p < n; p++ {
				row := func(int) (value.Value, bool) { return rowWiseValue(t, seed, g, p) }
				if predicate.Eval(l, row, predicate.IEEE) == predicate.True {
					want = append(want, int64(p))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: %s on %s as %s %v:\nin place %v\nrow-wise %v", seed, l, g.Arr.DataType(), g.Type, g.Arr, got, want)
			}
			colfilter.RowScratch.Put(got)
		}
		g.Arr.Release()
	}
	if applied < 1000 {
		t.Fatalf("the in-place test applied to %d of 3000 leaves", applied)
	}
}

// rowWiseValue is g's value at position p as the row-wise reading gives it.
func rowWiseValue(t *testing.T, seed int64, g colfiltertest.Column, p int) (value.Value, bool) {
	t.Helper()
	v, null, err := colfiltertest.RowValue(g, p)
	if err != nil {
		t.Fatalf("seed %d: oracle: %v", seed, err)
	}
	return v, null
}

// An And of leaves tested in place (the dense shortcut) keeps exactly the
// positions predicate.Eval (IEEE) finds TRUE, over random leaves on
// generated columns of every kernel's type.
func TestAnAndOfLeavesTestedInPlaceKeepsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	applied := 0
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		cols := make([]colfiltertest.Column, rng.Intn(3)+1)
		leaves := make([]*predicate.Leaf, len(cols))
		typs := make([]iceberg.Type, len(cols))
		arrs := make([]arrow.Array, len(cols))
		kids := make([]predicate.Expr, len(cols))
		for i := range cols {
			cols[i] = colfiltertest.Array(rng, rng.Intn(colfiltertest.Kinds), n)
			leaves[i] = colfiltertest.Leaf(rng, i+1, cols[i])
			typs[i], arrs[i], kids[i] = cols[i].Type, cols[i].Arr, leaves[i]
		}
		e := predicate.And{Kids: kids}
		if got, ok := colfilter.LeavesRowsOf(leaves, typs, arrs); ok {
			applied++
			var want []int64
			for p := 0; p < n; p++ {
				row := func(id int) (value.Value, bool) { return rowWiseValue(t, seed, cols[id-1], p) }
				if predicate.Eval(e, row, predicate.IEEE) == predicate.True {
					want = append(want, int64(p))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: %s:\nin place %v\nrow-wise %v", seed, e, got, want)
			}
			colfilter.RowScratch.Put(got)
		}
		for _, c := range cols {
			c.Arr.Release()
		}
	}
	if applied < 500 {
		t.Fatalf("the in-place test applied to %d of 3000 conjunctions", applied)
	}
}

// A point lookup's equality on a whole int64 column without NULLs keeps
// exactly the positions holding the value (every one, none when absent),
// and its negation the others.
func TestInt64EqualityOverAWholeColumnKeepsExactlyThePositionsOfTheValue(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range []int64{5, 7, -3, 7, 0, 7, 1 << 40} {
		b.Append(v)
	}
	arr := b.NewArray()
	defer arr.Release()
	for _, tc := range []struct {
		lit     int64
		negated bool
		want    string
	}{{7, false, "[1 3 5]"}, {1 << 40, false, "[6]"}, {8, false, "[]"}, {7, true, "[0 2 4 6]"}} {
		l := &predicate.Leaf{FieldID: 1, Op: predicate.OpEq, Lits: []value.Value{{K: value.Int, I: tc.lit}}, Negated: tc.negated}
		got, ok := colfilter.LeafRowsOf(l, iceberg.PrimitiveTypes.Int64, arr)
		if !ok || fmt.Sprint(got) != tc.want {
			t.Fatalf("%s: kept %v (ok %v), want %s", l, got, ok, tc.want)
		}
		colfilter.RowScratch.Put(got)
	}
}
