package deletes

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// fieldWithID is an Arrow field that pqarrow writes with Parquet field id
// id (0: no field id).
func fieldWithID(name string, id int, t arrow.DataType, nullable bool) arrow.Field {
	f := arrow.Field{Name: name, Type: t, Nullable: nullable}
	if id > 0 {
		f.Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
	}
	return f
}

// writeParquet writes the rows fill appends as a Parquet file with
// rowsPerGroup rows per row group.
func writeParquet(t testing.TB, fields []arrow.Field, rows int, rowsPerGroup int64, fill func(rb *array.RecordBuilder), props ...parquet.WriterProperty) []byte {
	t.Helper()
	sch := arrow.NewSchema(fields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer rb.Release()
	fill(rb)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if int(rec.NumRows()) != rows {
		t.Fatalf("writeParquet: built %d rows, want %d", rec.NumRows(), rows)
	}
	tbl := array.NewTableFromRecords(sch, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	wp := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithStats(true)}, props...)...)
	if err := pqarrow.WriteTable(tbl, &buf, rowsPerGroup, wp, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type posRow struct {
	path string
	pos  int64
}

// writePositionDeletes writes a position delete file, with or without the
// reserved field ids.
func writePositionDeletes(t testing.TB, rows []posRow, rowsPerGroup int64, withIDs bool) []byte {
	idPath, idPos := filePathFieldID, posFieldID
	if !withIDs {
		idPath, idPos = 0, 0
	}
	fields := []arrow.Field{
		fieldWithID("file_path", idPath, arrow.BinaryTypes.String, false),
		fieldWithID("pos", idPos, arrow.PrimitiveTypes.Int64, false),
	}
	return writeParquet(t, fields, len(rows), rowsPerGroup, func(rb *array.RecordBuilder) {
		for _, r := range rows {
			rb.Field(0).(*array.StringBuilder).Append(r.path)
			rb.Field(1).(*array.Int64Builder).Append(r.pos)
		}
	})
}
