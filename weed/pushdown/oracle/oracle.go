// Package oracle decodes whole Parquet files with arrow-go — the brute-force
// reference every pruning tier is checked against — and says which rows a
// predicate matches and whether a plan kept them all.
package oracle

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// File is a whole file decoded by the oracle: per field id, per row,
// the value (or null), plus the row group boundaries.
type File struct {
	Rows          int64
	RowGroupStart []int64 // first row of each row group
	Cols          map[int][]Cell
}

// Cell is one value of one row.
type Cell struct {
	V    value.Value
	Null bool
}

// decodeAll reads every row of a Parquet file with arrow-go (the brute-force
// oracle) and converts the top-level primitive columns of schema s.
func DecodeFile(data []byte, s *iceberg.Schema) (df *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			df, err = nil, fmt.Errorf("oracle: arrow-go panicked decoding the file: %v", r)
		}
	}()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("oracle: open: %w", err)
	}
	defer rdr.Close()
	df = &File{Cols: map[int][]Cell{}}
	for i := 0; i < rdr.NumRowGroups(); i++ {
		df.RowGroupStart = append(df.RowGroupStart, df.Rows)
		df.Rows += rdr.MetaData().RowGroup(i).NumRows()
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("oracle: arrow reader: %w", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("oracle: read: %w", err)
	}
	defer tbl.Release()
	for _, f := range s.Fields() {
		idx := tbl.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			continue
		}
		if _, ok := value.KindOf(f.Type); !ok && !isPrimitiveList(f.Type) {
			continue
		}
		col := tbl.Column(idx[0])
		var cells []Cell
		for _, chunk := range col.Data().Chunks() {
			for r := 0; r < chunk.Len(); r++ {
				if chunk.IsNull(r) {
					cells = append(cells, Cell{Null: true})
					continue
				}
				v, err := value.FromArrow(chunk, r, f.Type)
				if err != nil {
					return nil, err
				}
				cells = append(cells, Cell{V: v})
			}
		}
		df.Cols[f.ID] = cells
	}
	return df, nil
}

// isPrimitiveList reports whether t is a list of an orderable primitive
// (what array_contains reads).
func isPrimitiveList(t iceberg.Type) bool {
	lt, ok := t.(*iceberg.ListType)
	if !ok {
		return false
	}
	_, ok = value.KindOf(lt.Element)
	return ok
}

// Row returns the predicate row accessor of row i.
func (f *File) Row(i int64) predicate.Row {
	return func(id int) (value.Value, bool) {
		c, ok := f.Cols[id]
		if !ok {
			return value.Value{}, true
		}
		return c[i].V, c[i].Null
	}
}

// RowGroupOf returns the row group holding file row i.
func (f *File) RowGroupOf(i int64) int {
	rg := 0
	for rg+1 < len(f.RowGroupStart) && f.RowGroupStart[rg+1] <= i {
		rg++
	}
	return rg
}

// Matching returns the file-absolute positions of the rows matching e
// under either NaN semantics.
func (f *File) Matching(e predicate.Expr) []int64 {
	var out []int64
	for i := int64(0); i < f.Rows; i++ {
		if predicate.Matches(e, f.Row(i)) {
			out = append(out, i)
		}
	}
	return out
}
