package connector

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

func fieldID(id string) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id})
}

// mismatchedFile is one row group of (id, x) where the table's int x is
// stored as a struct: no value of it converts to an int.
func mismatchedFile(t *testing.T) arrow.RecordBatch {
	t.Helper()
	inner := arrow.StructOf(arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fieldID("3")})
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID("1")},
		{Name: "x", Type: inner, Nullable: true, Metadata: fieldID("2")},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := 0; i < 4; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
	}
	return b.NewRecordBatch()
}

func mismatchedQuery(t *testing.T, where string) *prepared {
	t.Helper()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
	)
	bound, err := sqlpred.Bind(where, sc)
	if err != nil {
		t.Fatal(err)
	}
	p := &prepared{q: Query{Table: "ns.t"}, schema: sc, selectIDs: []int{1}, parents: parentIDs(sc), defaults: map[int]fieldDefault{}}
	if p.expr, _, err = residual(sc, bound); err != nil {
		t.Fatal(err)
	}
	return p
}

// A value the decoder cannot convert for the predicate fails the read with
// an error naming the file, the column and the row group, in both decoding
// modes: it is never read as NULL (which `x IS NULL` would then select).
func TestAnUnconvertibleValueFailsTheReadNamingFileColumnAndRowGroup(t *testing.T) {
	rec := mismatchedFile(t)
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties())
	const path = "s3://warehouse/ns/t/data/mismatched.parquet"
	fl := layoutOf(t, path, data)
	ctx := context.Background()
	for _, where := range []string{"x IS NULL", "x = 2", "NOT (x > 1)"} {
		p := mismatchedQuery(t, where)
		for _, m := range []Mode{PageAware, RowGroup} {
			c := &Connector{opts: Options{Mode: m}}
			r := &rowGroupRead{rg: 0, numRows: rec.NumRows(), pages: map[int][]pageRange{}, dict: map[int]byteRange{}}
			n, err := c.needOf(ctx, p, fl)
			if err != nil {
				t.Fatal(err)
			}
			f := &fileRead{pf: &pushdown_pb.PlannedFile{File: path}, fl: fl, need: n}
			got, err := c.pipeline(p).rowGroup(ctx, f, r, []int{0, 1}, sparseOf(data))
			if err == nil {
				t.Fatalf("mode %d WHERE %s: %d rows, want an error", m, where, got.NumRows())
			}
			for _, part := range []string{path, "row group 0", "column x", "struct"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("mode %d WHERE %s: error %q does not name %q", m, where, err, part)
				}
			}
		}
		// the plain read's residual evaluation fails the same way
		if out, err := filterRecord(ctx, rec, p, 0); err == nil {
			t.Errorf("plain WHERE %s: %d rows, want an error", where, out.NumRows())
		} else if !strings.Contains(err.Error(), "column x") || !strings.Contains(err.Error(), "ns.t") {
			t.Errorf("plain WHERE %s: error %q does not name the table and column x", where, err)
		}
	}
}
