package pagedecode

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
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
				md, cc, chunk := chunkOf(t, buf.Bytes(), 0)
				m, err := pqarrow.NewSchemaManifest(md.Schema, nil, &pqarrow.ArrowReadProperties{})
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := ListRecords(m.Fields[0], md.Schema.Column(0), cc.Compression(), chunk, cc.NumValues(), rows, nil)
				if err != nil || !ok {
					t.Fatalf("decoded %v: %v", ok, err)
				}
				defer got.Release()
				pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				tbl := pqarrowTable(t, pf)
				defer tbl.Release()
				want := tbl.Column(0).Data().Chunk(0)
				if !arrow.TypeEqual(got.DataType(), want.DataType()) || !array.Equal(got, want) {
					t.Fatalf("ListRecords gave %s %v\npqarrow %s %v", got.DataType(), got, want.DataType(), want)
				}
			})
		}
	}
}

// Decimals stored as variable-length big-endian bytes (up to 38 digits and
// past them) and UUIDs (an extension type on 16 fixed bytes) decode from a
// chunk's pages as pqarrow decodes them.
func TestRecordsOfByteArrayDecimalsAndUUIDsEqualPqarrowsDecode(t *testing.T) {
	const rows = 2000
	uuidType := arrow.GetExtensionType("arrow.uuid")
	if uuidType == nil {
		uuidType = extensions.NewUUIDType()
	}
	root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("d20", parquet.Repetitions.Optional, schema.NewDecimalLogicalType(20, 2), parquet.Types.ByteArray, -1, 1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("d45", parquet.Repetitions.Optional, schema.NewDecimalLogicalType(45, 3), parquet.Types.ByteArray, -1, 2)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("u", parquet.Repetitions.Optional, schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16, 3)),
	}, -1))
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDataPageSize(256), parquet.WithBatchSize(32), parquet.WithDictionaryDefault(false))))
	rg := w.AppendRowGroup()
	defs := make([]int16, rows)
	for i := range defs {
		if i%9 != 4 {
			defs[i] = 1
		}
	}
	// minimal two's complement big-endian bytes of v
	twos := func(v *big.Int) []byte {
		n := (v.BitLen() + 8) / 8
		mod := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		u := new(big.Int).Set(v)
		if u.Sign() < 0 {
			u.Add(u, mod)
		}
		out := u.FillBytes(make([]byte, n))
		return out
	}
	for c, digits := range []int64{17, 44} {
		var vals []parquet.ByteArray
		for i := 0; i < rows; i++ {
			if defs[i] == 0 {
				continue
			}
			v := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)%digits), nil)
			v.Mul(v, big.NewInt(int64(i%97)+1))
			if i%3 == 0 {
				v.Neg(v)
			}
			vals = append(vals, twos(v))
		}
		cw, err := rg.NextColumn()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(vals, defs, nil); err != nil {
			t.Fatalf("column %d: %v", c, err)
		}
		cw.Close()
	}
	var ids []parquet.FixedLenByteArray
	for i := 0; i < rows; i++ {
		if defs[i] == 1 {
			id := make([]byte, 16)
			for k := range id {
				id[k] = byte(i*7 + k*13)
			}
			ids = append(ids, id)
		}
	}
	cw, err := rg.NextColumn()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch(ids, defs, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	rg.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	tbl := pqarrowTable(t, pf)
	defer tbl.Release()
	md := pf.MetaData()
	for c := 0; c < 3; c++ {
		_, cc, chunk := chunkOf(t, buf.Bytes(), c)
		want := tbl.Column(c).Data().Chunk(0)
		if c == 2 && !arrow.TypeEqual(want.DataType(), uuidType) {
			t.Fatalf("pqarrow reads the UUID column as %s", want.DataType())
		}
		got, ok, err := Records(md.Schema.Column(c), cc.Compression(), chunk, rows, want.DataType(), nil)
		if err != nil || !ok {
			t.Fatalf("column %d as %s: decoded %v: %v", c, want.DataType(), ok, err)
		}
		if !arrow.TypeEqual(got.DataType(), want.DataType()) || !array.Equal(got, want) {
			t.Fatalf("column %d: Records gave %s, pqarrow %s (equal %v)", c, got.DataType(), want.DataType(), array.Equal(got, want))
		}
		got.Release()
	}
}

// pqarrowTable is pf decoded whole by pqarrow: the oracle.
func pqarrowTable(t *testing.T, pf *file.Reader) arrow.Table {
	t.Helper()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
