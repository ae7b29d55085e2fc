package connector

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	vectors "github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// exactRecord is a record of (id int64, name string, vec list<float32>):
// row r's vector is [dist(r), 0] (so its squared L2 distance to [0, 0] is
// dist(r)²), NULL where null(r).
func exactRecord(mem memory.Allocator, first, n int, dist func(int) float32, null func(int) bool) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "vec", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	vb := b.Field(2).(*array.ListBuilder)
	for r := first; r < first+n; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", r))
		if null(r) {
			vb.AppendNull()
			continue
		}
		vb.Append(true)
		vb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{dist(r), 0}, nil)
	}
	return b.NewRecordBatch()
}

// The exact search ranks each record as it is read and keeps only the k
// nearest rows' columns, copied out of their records (every input record
// can be freed at once, the kept record never exceeds k rows), and its
// answer is the one ranking every row at the end gives: nearest first,
// ties in read order (record, then row), NULL vectors never returned.
func TestExactSearchKeepsOnlyTheKNearestRowsAndRanksTiesInReadOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	// Distances repeat every 7 rows (many ties across and within records);
	// every 5th vector is NULL; one record has no valid vector at all.
	dist := func(r int) float32 { return float32(r % 7) }
	null := func(r int) bool { return r%5 == 0 || (r >= 300 && r < 340) }
	sizes := []int{50, 13, 1, 0, 90, 40, 200, 7}
	const k = 12
	top := &exactTopK{ctx: context.Background(), column: "vec", vcol: 2, metric: vectors.L2, lengths: map[int]int64{},
		q: vectors.Query{Vector: []float32{0, 0}, K: k, Metric: vectors.L2}}
	defer top.release()
	type ref struct {
		id   int64
		name string
		dist float32
	}
	var all []ref // every valid row in read order
	first := 0
	for _, n := range sizes {
		rec := exactRecord(mem, first, n, dist, null)
		for r := first; r < first+n; r++ {
			if !null(r) {
				all = append(all, ref{int64(r), fmt.Sprintf("row-%d", r), dist(r) * dist(r)})
			}
		}
		first += n
		if err := top.add(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release() // the kept rows must not depend on it
		if top.kept != nil && top.kept.NumRows() > k {
			t.Fatalf("after %d rows the search keeps %d rows, want at most %d", first, top.kept.NumRows(), k)
		}
	}
	if mem.CurrentAlloc() != 0 {
		t.Fatalf("%d bytes of the input records are still referenced after each was released", mem.CurrentAlloc())
	}
	// ids are read order; a stable sort by distance is the old ranking.
	slices.SortStableFunc(all, func(a, b ref) int {
		switch {
		case a.dist < b.dist:
			return -1
		case a.dist > b.dist:
			return 1
		}
		return 0
	})
	want := all[:k]
	rows := top.winners()
	if len(rows) != k {
		t.Fatalf("%d rows, want %d", len(rows), k)
	}
	for i, w := range rows {
		id := w.cols(0).(*array.Int64).Value(w.row)
		name := w.cols(1).(*array.String).Value(w.row)
		if id != want[i].id || name != want[i].name || w.dist != want[i].dist {
			t.Fatalf("row %d is (%d, %s, %g), want (%d, %s, %g)", i, id, name, w.dist, want[i].id, want[i].name, want[i].dist)
		}
	}
	if top.scored != int64(len(all)) {
		t.Fatalf("%d vectors scored, want %d (the valid ones)", top.scored, len(all))
	}
	if top.lengths[2] != int64(len(all)) || len(top.lengths) != 1 {
		t.Fatalf("vector lengths seen %v, want %d of length 2", top.lengths, len(all))
	}
}

// A record whose vector column is not a list is an error naming the
// column.
func TestExactSearchRefusesAVectorColumnThatIsNotAList(t *testing.T) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "vec", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	b.Field(1).(*array.Int64Builder).Append(2)
	rec := b.NewRecordBatch()
	defer rec.Release()
	top := &exactTopK{ctx: context.Background(), column: "vec", vcol: 1, metric: vectors.L2, lengths: map[int]int64{},
		q: vectors.Query{Vector: []float32{0, 0}, K: 3, Metric: vectors.L2}}
	err := top.add(rec)
	if err == nil || err.Error() != `column "vec": it is int64, not a list` {
		t.Fatalf("err %v, want the column named and it is not a list", err)
	}
}
