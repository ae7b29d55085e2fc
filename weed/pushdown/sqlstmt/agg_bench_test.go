package sqlstmt

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// The demo's GROUP BY shape: 100 tenants × 5 statuses, COUNT, AVG, MAX of
// an int64, over 1M rows in records of 64K.
func BenchmarkGroupByTwoStringsOverAMillionRows(b *testing.B) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String, Required: true})
	sch := arrow.NewSchema([]arrow.Field{{Name: "tenant_id", Type: arrow.BinaryTypes.String}, {Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	statuses := []string{"ok", "error", "warn", "retry", "timeout"}
	var recs []arrow.RecordBatch
	for r := 0; r < 16; r++ {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := 0; i < 65536; i++ {
			n := r*65536 + i
			bld.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("tenant-%03d", n%100))
			bld.Field(1).(*array.StringBuilder).Append(statuses[(n/100)%5])
			bld.Field(2).(*array.Int64Builder).Append(int64(n))
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	st, err := Parse("SELECT tenant_id, status, COUNT(*), AVG(id), MAX(id) FROM ns.t GROUP BY tenant_id, status")
	if err != nil {
		b.Fatal(err)
	}
	if st, err = canonicalIn(st, schema); err != nil {
		b.Fatal(err)
	}
	columns := ReadColumns(st.Items, st.GroupBy)
	b.ResetTimer()
	for range b.N {
		a := NewAggregator(st, columns)
		for _, rec := range recs {
			if err := a.Add(rec); err != nil {
				b.Fatal(err)
			}
		}
		out, err := a.finish(sch, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		if out.NumRows() != 500 {
			b.Fatalf("%d groups", out.NumRows())
		}
		out.Release()
	}
}
