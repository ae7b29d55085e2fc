package pagedecode

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A list column's whole chunk decoded by ListRecords equals pqarrow's
// decode of it: NULL lists, empty lists, NULL and required elements, of
// several element types.
func TestListRecordsOfAChunkEqualPqarrowsDecode(t *testing.T) {
	for _, elem := range []arrow.Field{
		{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: false},
		{Name: "element", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "element", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	} {
		for _, listNullable := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/elements nullable %v/lists nullable %v", elem.Type, elem.Nullable, listNullable), func(t *testing.T) {
				sch := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOfField(elem), Nullable: listNullable}}, nil)
				b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
				defer b.Release()
				lb := b.Field(0).(*array.ListBuilder)
				const rows = 3000
				for i := 0; i < rows; i++ {
					switch {
					case listNullable && i%11 == 3:
						lb.AppendNull()
					case i%7 == 2:
						lb.Append(true) // empty
					default:
						lb.Append(true)
						for k := 0; k < i%4+1; k++ {
							vb := lb.ValueBuilder()
							if elem.Nullable && (i+k)%5 == 0 {
								vb.AppendNull()
								continue
							}
							switch x := vb.(type) {
							case *array.Int64Builder:
								x.Append(int64(i*10 + k))
							case *array.Int32Builder:
								x.Append(int32(i*10 - k))
							case *array.Float64Builder:
								x.Append(float64(i) / float64(k+1))
							case *array.StringBuilder:
								x.Append(fmt.Sprintf("v%d-%d", i%17, k))
							case *array.BooleanBuilder:
								x.Append((i+k)%3 == 0)
							}
						}
					}
				}
				rec := b.NewRecordBatch()
				defer rec.Release()
				var buf bytes.Buffer
				props := parquet.NewWriterProperties(parquet.WithDataPageSize(512), parquet.WithBatchSize(64), parquet.WithCompression(compress.Codecs.Snappy))
				if err := pqarrow.WriteTable(array.NewTableFromRecords(sch, []arrow.RecordBatch{rec}), &buf, rows, props, pqarrow.DefaultWriterProps()); err != nil {
					t.Fatal(err)
				}
				pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				md := pf.MetaData()
				cc, err := md.RowGroup(0).ColumnChunk(0)
				if err != nil {
					t.Fatal(err)
				}
				start := cc.DataPageOffset()
				if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < start {
					start = cc.DictionaryPageOffset()
				}
				chunk := buf.Bytes()[start : start+cc.TotalCompressedSize()]
				m, err := pqarrow.NewSchemaManifest(md.Schema, nil, &pqarrow.ArrowReadProperties{})
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := ListRecords(m.Fields[0], md.Schema.Column(0), cc.Compression(), chunk, cc.NumValues(), rows, nil)
				if err != nil || !ok {
					t.Fatalf("decoded %v: %v", ok, err)
				}
				defer got.Release()
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := fr.ReadTable(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer tbl.Release()
				want := tbl.Column(0).Data().Chunk(0)
				if !arrow.TypeEqual(got.DataType(), want.DataType()) || !array.Equal(got, want) {
					t.Fatalf("ListRecords gave %s %v\npqarrow %s %v", got.DataType(), got, want.DataType(), want)
				}
			})
		}
	}
}
