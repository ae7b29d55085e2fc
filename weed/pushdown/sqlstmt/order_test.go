package sqlstmt

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A top-k over more rows than the Sorter holds (cut to OFFSET + LIMIT as
// they pass its bound) gives the rows a sort of everything gives, NULLs
// placed as asked.
func TestATopKCutWhileReadingEqualsASortOfEveryRow(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	sch := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var all []*int64
	st := &Statement{HasLimit: true, Limit: 10, Offset: 5}
	orders := []Order{{Item: 0, Desc: true, NullsFirst: false}, {Item: 1}}
	s := NewSorter(orders, st)
	defer s.Release()
	id := int64(0)
	for range 40 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for range 5000 {
			if r.IntN(50) == 0 {
				b.Field(0).AppendNull()
				all = append(all, nil)
			} else {
				v := r.Int64N(100_000)
				b.Field(0).(*array.Int64Builder).Append(v)
				all = append(all, &v)
			}
			b.Field(1).(*array.Int64Builder).Append(id)
			id++
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := s.Add(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if s.rows > 100_000 {
		t.Fatalf("the Sorter holds %d rows: it was never cut", s.rows)
	}
	sorted, err := s.Sorted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sorted.Release()
	var got []int64
	ids := sorted.Column(1).(*array.Int64)
	for i := 5; i < 15; i++ {
		got = append(got, ids.Value(i))
	}
	// the oracle: every row sorted by x DESC NULLS LAST, then id
	order := make([]int64, len(all))
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortStableFunc(order, func(a, b int64) int {
		xa, xb := all[a], all[b]
		switch {
		case xa == nil && xb == nil:
			return int(a - b)
		case xa == nil:
			return 1
		case xb == nil:
			return -1
		case *xa != *xb:
			if *xa > *xb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	if want := order[5:15]; !slices.Equal(got, want) {
		t.Fatalf("rows 5..15: %v, want %v", got, want)
	}
}
