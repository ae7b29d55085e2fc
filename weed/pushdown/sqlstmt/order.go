package sqlstmt

// ORDER BY output columns: arrow-go's sort_indices (stable, lexicographic,
// NULLs first or last per key) and take. Under a LIMIT the rows kept are
// cut to OFFSET + LIMIT whenever they grow past a bound, so a top-k over
// a large table holds about k rows, not the table.

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// MaxSortRows bounds the rows an ORDER BY without a LIMIT may sort in
// memory.
const MaxSortRows = 50_000_000

// Sorter collects records (in item layout) and sorts them.
type Sorter struct {
	orders []Order
	keep   int64 // OFFSET + LIMIT; < 0: every row
	recs   []arrow.RecordBatch
	rows   int64
}

func NewSorter(orders []Order, st *Statement) *Sorter {
	keep := int64(-1)
	if st.HasLimit {
		keep = st.Limit + st.Offset
	}
	return &Sorter{orders: orders, keep: keep}
}

func (s *Sorter) Add(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Retain()
	s.recs = append(s.recs, rec)
	s.rows += rec.NumRows()
	if s.keep >= 0 && s.rows > max(4*s.keep, 1<<16) {
		return s.compact(ctx)
	}
	if s.rows > MaxSortRows {
		return perr.New(perr.ResourceExhausted, "SQL: ORDER BY over more than %d rows without a LIMIT", MaxSortRows)
	}
	return nil
}

// compact sorts what is held and keeps the first keep rows.
func (s *Sorter) compact(ctx context.Context) error {
	rec, err := s.Sorted(ctx)
	if err != nil {
		return err
	}
	s.Release()
	if s.keep >= 0 && rec.NumRows() > s.keep {
		cut := rec.NewSlice(0, s.keep)
		rec.Release()
		rec = cut
	}
	s.recs, s.rows = []arrow.RecordBatch{rec}, rec.NumRows()
	return nil
}

func (s *Sorter) Release() {
	for _, r := range s.recs {
		r.Release()
	}
	s.recs = nil
}

// sorted is every held row in order, as one record.
func (s *Sorter) Sorted(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := concat(s.recs)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return sortRecord(ctx, rec, s.orders)
}

// sortRecord returns rec's rows in the order of orders.
func sortRecord(ctx context.Context, rec arrow.RecordBatch, orders []Order) (arrow.RecordBatch, error) {
	if len(orders) == 0 || rec.NumRows() < 2 {
		rec.Retain()
		return rec, nil
	}
	keys := make([]compute.SortKey, len(orders))
	for i, o := range orders {
		keys[i] = compute.SortKey{ColumnIndex: o.Item, Order: compute.SortOrderAscending, NullPlacement: compute.SortNullsAtEnd}
		if o.Desc {
			keys[i].Order = compute.SortOrderDescending
		}
		if o.NullsFirst {
			keys[i].NullPlacement = compute.SortNullsAtStart
		}
	}
	idx, err := compute.SortIndicesRecordBatch(ctx, rec, keys)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "SQL: ORDER BY: %v", err)
	}
	defer idx.Release()
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		if cols[i], err = compute.TakeArray(ctx, rec.Column(i), idx); err != nil {
			return nil, fmt.Errorf("ORDER BY: %w", err)
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()), nil
}

// concat joins records of one schema into one.
func concat(recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	sch := recs[0].Schema()
	cols := make([]arrow.Array, sch.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(sch, cols, rows), nil
}

// Len is the number of records the sorter holds.
func (s *Sorter) Len() int { return len(s.recs) }

// Layout rebuilds rec (the columns read, in read order) in item order,
// named by the items; hidden items only when withHidden.
func Layout(rec arrow.RecordBatch, items []Item, columns []string, withHidden bool) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for _, it := range items {
		if it.Hidden && !withHidden {
			continue
		}
		at := readColumn(columns, it.Column)
		f := rec.Schema().Field(at)
		f.Name = it.Name
		fields = append(fields, f)
		cols = append(cols, rec.Column(at))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// Cut is rows OFFSET … LIMIT of rec (in item layout) without its hidden
// items. The caller releases it.
func (st *Statement) Cut(rec arrow.RecordBatch) arrow.RecordBatch {
	start, end := min(st.Offset, rec.NumRows()), rec.NumRows()
	if st.HasLimit {
		end = min(end, start+st.Limit)
	}
	cut := rec.NewSlice(start, end)
	defer cut.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, it := range st.Items {
		if !it.Hidden {
			fields = append(fields, cut.Schema().Field(i))
			cols = append(cols, cut.Column(i))
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, cut.NumRows())
}
