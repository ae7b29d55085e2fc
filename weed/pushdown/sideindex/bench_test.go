package sideindex

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
)

// BenchmarkBuild builds each kind on a 1M-row random int64 column (no
// page index, no bloom in the file) and reports rows/s and the payload's
// size relative to the column chunks' compressed size.
func BenchmarkBuild(b *testing.B) {
	const rows = 1 << 20
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < rows; i++ {
		ib.Append(r.Int64N(1 << 40))
	}
	col := ib.NewArray()
	tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{array.NewRecordBatch(as, []arrow.Array{col}, rows)})
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(128<<10))
	if err := pqarrow.WriteTable(tbl, &buf, 128<<10, props, pqarrow.NewArrowWriterProperties()); err != nil {
		b.Fatal(err)
	}
	f := loadFile(b, "s3://b/t/data/bench.parquet", buf.Bytes(), iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}))
	var chunkBytes int64
	for rg := range f.footer.Chunks {
		chunkBytes += f.footer.Chunks[rg][0].Length
	}
	for _, k := range Kinds() {
		b.Run(k.Name(), func(b *testing.B) {
			in := f.input(b, 1, nil)
			var size int
			for i := 0; i < b.N; i++ {
				p, err := k.Build(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
				size = len(p)
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size)/float64(chunkBytes), "payload/chunk")
		})
	}
}
