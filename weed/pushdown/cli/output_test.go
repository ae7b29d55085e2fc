package cli

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Lists of numbers are written exactly as arrow-go's ValueStr writes them
// (the fast path must not change a character of the output), for fixed-size
// and variable lists, every width, NULL lists and elements, NaN,
// infinities, zeros and magnitudes on both sides of the 'e' cut-offs.
func TestListsOfNumbersAreWrittenExactlyAsArrowWritesThem(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specials := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-6, 9.99e-7, 1e21, 9.9e20, 1e-45, 3.4e38, 123456789, 0.1}
	float := func() float64 {
		if r.IntN(4) == 0 {
			return specials[r.IntN(len(specials))]
		}
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25))
	}
	mem := memory.NewGoAllocator()
	for _, elem := range []arrow.DataType{arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64} {
		for _, typ := range []arrow.DataType{arrow.FixedSizeListOf(5, elem), arrow.ListOf(elem)} {
			b := array.NewBuilder(mem, typ)
			lb := b.(array.ListLikeBuilder)
			for i := 0; i < 2000; i++ {
				if i%17 == 0 {
					lb.AppendNull()
					continue
				}
				n := 5
				if typ.ID() == arrow.LIST {
					n = r.IntN(4)
				}
				lb.Append(true)
				for k := 0; k < n; k++ {
					vb := lb.ValueBuilder()
					if r.IntN(11) == 0 {
						vb.AppendNull()
						continue
					}
					switch vb := vb.(type) {
					case *array.Float32Builder:
						vb.Append(float32(float()))
					case *array.Float64Builder:
						vb.Append(float())
					case *array.Int32Builder:
						vb.Append(r.Int32() - math.MaxInt32/2)
					case *array.Int64Builder:
						vb.Append(r.Int64() - math.MaxInt64/2)
					}
				}
			}
			arr := b.NewArray()
			b.Release()
			for i := 0; i < arr.Len(); i++ {
				if arr.IsNull(i) {
					if _, ok := appendNumberList(nil, arr, i); ok {
						t.Fatalf("%s row %d is NULL but was written", typ, i)
					}
					continue
				}
				got, ok := appendNumberList(nil, arr, i)
				if !ok {
					t.Fatalf("%s: not taken as a list of numbers", typ)
				}
				if want := arr.ValueStr(i); string(got) != want {
					t.Fatalf("%s row %d:\n got  %s\n want %s", typ, i, got, want)
				}
			}
			arr.Release()
		}
	}
}

// The table format writes rows as they come: the first tableWidthRows rows
// size the columns, a later wider value widens only its own line, and the
// output ends with the row count; with no rows it is the header and "(0
// rows)". CSV and JSON write every row in column order.
func TestQueryOutputIsWrittenRecordByRecord(t *testing.T) {
	mem := memory.NewGoAllocator()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	record := func(from, n int, name func(int) string) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sch)
		defer b.Release()
		for i := from; i < from+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if i == 3 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(name(i))
			}
		}
		return b.NewRecordBatch()
	}
	short := func(int) string { return "ab" }
	var out bytes.Buffer
	rw := newRowWriter(&out, "table")
	for _, rec := range []arrow.RecordBatch{record(0, 600, short), record(600, 600, short), record(1200, 1, func(int) string { return "a-much-longer-name" })} {
		if err := rw.write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := rw.finish(sch); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1203 || lines[0] != "id   name" || lines[1] != "0    ab" || lines[4] != "3    NULL" || lines[1000] != "999  ab" ||
		lines[1200] != "1199 ab" || lines[1201] != "1200 a-much-longer-name" || lines[1202] != "(1201 rows)" {
		t.Fatalf("table output: %d lines: %q … %q", len(lines), lines[:5], lines[len(lines)-3:])
	}

	out.Reset()
	rw = newRowWriter(&out, "table")
	if err := rw.finish(sch); err != nil {
		t.Fatal(err)
	}
	if out.String() != "id  name\n(0 rows)\n" {
		t.Fatalf("no rows: %q", out.String())
	}

	for format, want := range map[string]string{
		"csv":  "id,name\n0,ab\n1,ab\n2,ab\n3,\n",
		"json": `{"id":0,"name":"ab"}` + "\n" + `{"id":1,"name":"ab"}` + "\n" + `{"id":2,"name":"ab"}` + "\n" + `{"id":3,"name":null}` + "\n",
	} {
		out.Reset()
		rw := newRowWriter(&out, format)
		for _, rec := range []arrow.RecordBatch{record(0, 2, short), record(2, 2, short)} {
			if err := rw.write(rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		if err := rw.finish(sch); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("%s:\n%s\nwant\n%s", format, out.String(), want)
		}
	}
}
