package plan

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// memSource serves a file from memory.
type memSource []byte

func (m memSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, fmt.Errorf("read past end")
	}
	return copy(p, m[off:]), nil
}
func (m memSource) Size() int64 { return int64(len(m)) }

// memFiles is an Opener over in-memory files.
type memFiles map[string][]byte

func (m memFiles) open(_ context.Context, id footer.Identity) (footer.Source, error) {
	b, ok := m[id.Path]
	if !ok {
		return nil, fmt.Errorf("%s: not found", id.Path)
	}
	return memSource(b), nil
}

// decodedFile is a whole file decoded by the oracle: per field id, per row,
// the value (or null), plus the row group boundaries.
type decodedFile struct {
	rows    int64
	rgStart []int64 // first row of each row group
	cols    map[int][]cell
}

type cell struct {
	v    value.Value
	null bool
}

// decodeAll reads every row of a Parquet file with arrow-go (the brute-force
// oracle) and converts the top-level primitive columns of schema s.
func decodeAll(t testing.TB, data []byte, s *iceberg.Schema) *decodedFile {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("oracle: open: %v", err)
	}
	defer rdr.Close()
	df := &decodedFile{cols: map[int][]cell{}}
	for i := 0; i < rdr.NumRowGroups(); i++ {
		df.rgStart = append(df.rgStart, df.rows)
		df.rows += rdr.MetaData().RowGroup(i).NumRows()
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("oracle: arrow reader: %v", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("oracle: read: %v", err)
	}
	defer tbl.Release()
	for _, f := range s.Fields() {
		idx := tbl.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			continue
		}
		if _, ok := value.KindOf(f.Type); !ok {
			continue
		}
		col := tbl.Column(idx[0])
		var cells []cell
		for _, chunk := range col.Data().Chunks() {
			for r := 0; r < chunk.Len(); r++ {
				if chunk.IsNull(r) {
					cells = append(cells, cell{null: true})
					continue
				}
				cells = append(cells, cell{v: arrowValue(t, chunk, r, f.Type)})
			}
		}
		df.cols[f.ID] = cells
	}
	return df
}

func arrowValue(t testing.TB, a arrow.Array, r int, typ iceberg.Type) value.Value {
	switch x := a.(type) {
	case *array.Int8:
		return value.OfInt(int64(x.Value(r)))
	case *array.Int16:
		return value.OfInt(int64(x.Value(r)))
	case *array.Int32:
		return value.OfInt(int64(x.Value(r)))
	case *array.Int64:
		return value.OfInt(x.Value(r))
	case *array.Uint8:
		return value.OfInt(int64(x.Value(r)))
	case *array.Uint16:
		return value.OfInt(int64(x.Value(r)))
	case *array.Uint32:
		return value.OfInt(int64(x.Value(r)))
	case *array.Uint64:
		return value.OfUint(x.Value(r))
	case *array.Float32:
		return value.OfFloat(float64(x.Value(r)))
	case *array.Float64:
		return value.OfFloat(x.Value(r))
	case *array.Float16:
		return value.OfFloat(float64(x.Value(r).Float32()))
	case *array.Boolean:
		return value.OfBool(x.Value(r))
	case *array.String:
		return value.OfString(x.Value(r))
	case *array.LargeString:
		return value.OfString(x.Value(r))
	case *array.Binary:
		return value.OfBytes(append([]byte{}, x.Value(r)...))
	case *array.LargeBinary:
		return value.OfBytes(append([]byte{}, x.Value(r)...))
	case *array.FixedSizeBinary:
		return value.OfBytes(append([]byte{}, x.Value(r)...))
	case *extensions.UUIDArray:
		u := x.Value(r)
		return value.OfBytes(append([]byte{}, u[:]...))
	case *array.Date32:
		return value.OfInt(int64(x.Value(r)))
	case *array.Date64:
		return value.OfInt(int64(x.Value(r)) / 86_400_000)
	case *array.Time32:
		unit := x.DataType().(*arrow.Time32Type).Unit
		v := int64(x.Value(r))
		if unit == arrow.Millisecond {
			v *= 1000
		} else {
			v *= 1_000_000
		}
		return value.OfInt(v)
	case *array.Time64:
		v := int64(x.Value(r))
		if x.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			v /= 1000
		}
		return value.OfInt(v)
	case *array.Timestamp:
		unit := x.DataType().(*arrow.TimestampType).Unit
		v := int64(x.Value(r))
		nanos := value.IsNanosecond(typ)
		switch unit {
		case arrow.Second:
			v *= 1_000_000
			if nanos {
				v *= 1000
			}
		case arrow.Millisecond:
			v *= 1000
			if nanos {
				v *= 1000
			}
		case arrow.Microsecond:
			if nanos {
				v *= 1000
			}
		case arrow.Nanosecond:
			if !nanos {
				v = floorDiv(v, 1000)
			}
		}
		return value.OfInt(v)
	case *array.Decimal128:
		dt := x.DataType().(*arrow.Decimal128Type)
		return value.OfDecimal(x.Value(r).BigInt(), dt.Scale)
	case *array.Decimal256:
		dt := x.DataType().(*arrow.Decimal256Type)
		return value.OfDecimal(x.Value(r).BigInt(), dt.Scale)
	case array.ExtensionArray:
		return arrowValue(t, x.Storage(), r, typ)
	}
	t.Fatalf("oracle: unsupported arrow type %s", a.DataType())
	return value.Value{}
}

// checkPlan asserts that every row matching e lies inside the plan of one
// file, and returns (matching rows, planned rows).
func checkPlan(t testing.TB, name string, e predicate.Expr, df *decodedFile, fp *FilePlan, resp *pushdown_pb.ParquetPushdownResponse) (int64, int64) {
	t.Helper()
	var matching int64
	row := func(i int64) predicate.Row {
		return func(id int) (value.Value, bool) {
			c, ok := df.cols[id]
			if !ok {
				return value.Value{}, true
			}
			return c[i].v, c[i].null
		}
	}
	rgOf := func(i int64) int {
		rg := 0
		for rg+1 < len(df.rgStart) && df.rgStart[rg+1] <= i {
			rg++
		}
		return rg
	}
	for i := int64(0); i < df.rows; i++ {
		if !predicate.Matches(e, row(i)) {
			continue
		}
		matching++
		if fp.Skip {
			t.Fatalf("%s: %s: row %d matches but the file was pruned by %s", name, e, i, fp.SkipTier)
		}
		rg := rgOf(i)
		rgp := fp.RowGroups[rg]
		if rgp.Skip {
			t.Fatalf("%s: %s: row %d (row group %d) matches but the row group was pruned by %s", name, e, i, rg, rgp.SkipTier)
		}
		local := i - df.rgStart[rg]
		if rgp.Rows != nil && !rgp.Rows.Overlaps(local, local+1) {
			t.Fatalf("%s: %s: row %d (row group %d, local %d) matches but the page index kept only %v", name, e, i, rg, local, rgp.Rows)
		}
	}
	var planned int64
	if !fp.Skip {
		for rg, rgp := range fp.RowGroups {
			if rgp.Skip {
				continue
			}
			if rgp.Rows == nil {
				planned += fp.Footer.Meta.RowGroup(rg).NumRows()
			} else {
				planned += rgp.Rows.Rows()
			}
		}
	}
	return matching, planned
}
