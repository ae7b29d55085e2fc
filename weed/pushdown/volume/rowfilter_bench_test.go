package volume

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// demoRowGroup is a Parquet file of one row group of rows like the demo
// table's (id, tenant_id of 100 tenants, status of 4, a log message), and
// its table schema.
func demoRowGroup(b testing.TB, rows int) ([]byte, *iceberg.Schema) {
	return demoRowGroupWith(b, rows)
}

// demoRowGroupWith is demoRowGroup written with more writer properties
// (small pages, say).
func demoRowGroupWith(b testing.TB, rows int, props ...parquet.WriterProperty) ([]byte, *iceberg.Schema) {
	md := func(id string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id}) }
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: md("1")},
		{Name: "tenant_id", Type: arrow.BinaryTypes.String, Metadata: md("2")},
		{Name: "status", Type: arrow.BinaryTypes.String, Metadata: md("3")},
		{Name: "message", Type: arrow.BinaryTypes.String, Metadata: md("4")},
	}, nil)
	rng := rand.New(rand.NewSource(1))
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer rb.Release()
	words := []string{"request", "served", "timeout", "upstream", "cache", "miss", "retry", "ok", "slow", "user"}
	statuses := []string{"ok", "ok", "warn", "error"}
	for i := 0; i < rows; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("tenant-%03d", rng.Intn(100)))
		rb.Field(2).(*array.StringBuilder).Append(statuses[rng.Intn(len(statuses))])
		msg := fmt.Sprintf("%s %s %s trace=%08x", words[rng.Intn(10)], words[rng.Intn(10)], words[rng.Intn(10)], rng.Uint32())
		rb.Field(3).(*array.StringBuilder).Append(msg)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	data := harness.WriteParquet(b, rec, parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(rows))}, props...)...))
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "message", Type: iceberg.PrimitiveTypes.String, Required: true})
	return data, sc
}

// BenchmarkVolumeRowFilter is the volume's filter of one row group of
// 131,072 demo-like rows (decode the predicate's columns, evaluate, keep):
// cpu-ns/row is what the cost model's scanVolumeNsPerRow
// (connector/fetch_scan.go) stands for.
func BenchmarkVolumeRowFilter(b *testing.B) {
	const rows = 1 << 17
	data, sc := demoRowGroup(b, rows)
	for _, q := range []struct {
		name string
		e    predicate.Expr
	}{
		{"tenant_equality", &predicate.Leaf{FieldID: 2, Op: predicate.OpEq, Lits: []value.Value{value.OfString("tenant-042")}}},
		{"status_and_tenant", predicate.And{Kids: []predicate.Expr{
			&predicate.Leaf{FieldID: 3, Op: predicate.OpEq, Lits: []value.Value{value.OfString("error")}},
			&predicate.Leaf{FieldID: 2, Op: predicate.OpEq, Lits: []value.Value{value.OfString("tenant-042")}}}}},
		{"like_infix", &predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%timeout%")}}},
		{"like_scattered", &predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%trace=000%")}}},
		{"or_scattered_candidates", predicate.Or{Kids: []predicate.Expr{
			&predicate.Leaf{FieldID: 3, Op: predicate.OpEq, Lits: []value.Value{value.OfString("warn")}},
			&predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%retry%")}}}}},
	} {
		b.Run(q.name, func(b *testing.B) {
			pf, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			ft := &footer.Footer{Meta: pf.MetaData()}
			cm := plan.NewColumnMap(pf.MetaData().Schema, nil)
			vf := &vectorFilter{e: q.e, ids: predicate.FieldIDs(q.e)}
			types := map[int]iceberg.Type{}
			var leaves []int
			for _, id := range vf.ids {
				f, _ := sc.FindFieldByID(id)
				types[id] = f.Type
				leaves = append(leaves, cm.Leaves(id)...)
			}
			var mask []int64 // the or_ query: every other row a candidate (not the dense path)
			if q.name == "or_scattered_candidates" {
				for r := int64(0); r < rows; r += 2 {
					mask = append(mask, r)
				}
			}
			kept := uint64(0)
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				out := roaring64.New()
				if err := evaluateRowGroup(context.Background(), fr, ft, cm, 0, rows, 0, leaves, vf, types, mask, out, nil); err != nil {
					b.Fatal(err)
				}
				kept = out.GetCardinality()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
			// CPU time (the collector's too): on a shared machine wall time
			// counts the other processes' turns
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/rows, "cpu-ns/row")
			b.ReportMetric(float64(kept), "kept")
		})
	}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
