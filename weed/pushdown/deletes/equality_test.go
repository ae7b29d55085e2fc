package deletes

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// The generated table. Values are held in the table type's domain (nil =
// NULL); each file stores them in its own physical form: the data file in
// the types before promotion (int, float, decimal(9,2), µs timestamps),
// the delete files in the promoted types (long, double, decimal(18,2), ms
// timestamps — a unit conversion too).
//
//	id  name  table type      data file            delete file
//	1   id    long            int64                —
//	2   i     long            int32                int64
//	3   f     double          float32              float64
//	4   d     double          float64 (Go NaN)     float64 (Java NaN)
//	5   dec   decimal(18,2)   decimal(9,2) FLBA    decimal(18,2) INT64 or FLBA
//	6   dt    date            date32               date32
//	7   ts    timestamp       timestamp µs         timestamp ms
//	8   s     string          string               string
//	9   b     binary          binary               binary
//	10  u     uuid            fixed[16]            fixed[16]
//	11  st    struct<k>       struct               struct
//	12  st.k  int             int32                int32

type eqCol struct {
	name string
	id   int
	gen  func(r *rand.Rand, forDelete bool) any
	eq   func(a, b any) bool
}

func eqInt(a, b any) bool { return a.(int64) == b.(int64) }

func eqFloat(a, b any) bool {
	x, y := a.(float64), b.(float64)
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	return x == y && math.Signbit(x) == math.Signbit(y)
}

func eqString(a, b any) bool { return a.(string) == b.(string) }

func eqBytes(a, b any) bool { return string(a.([]byte)) == string(b.([]byte)) }

var goNaN = math.NaN()                               // 0x7FF8000000000001
var javaNaN = math.Float64frombits(canonicalNaNBits) // 0x7FF8000000000000

func nullOr(r *rand.Rand, pNull float64, v func() any) any {
	if r.Float64() < pNull {
		return nil
	}
	return v()
}

var eqCols = []eqCol{
	{name: "i", id: 2, eq: eqInt, gen: func(r *rand.Rand, del bool) any {
		return nullOr(r, 0.1, func() any { return int64(r.IntN(12) - 3) })
	}},
	{name: "f", id: 3, eq: eqFloat, gen: func(r *rand.Rand, del bool) any {
		vals := []float64{0.5, 1.25, 0, math.Copysign(0, -1), float64(float32(0.1)), -7}
		if del {
			vals = append(vals, 0.1, javaNaN) // 0.1 is not a float32: never matches float32(0.1)
		} else {
			vals = append(vals, goNaN)
		}
		return nullOr(r, 0.1, func() any { return vals[r.IntN(len(vals))] })
	}},
	{name: "d", id: 4, eq: eqFloat, gen: func(r *rand.Rand, del bool) any {
		nan := goNaN
		if del {
			nan = javaNaN
		}
		vals := []float64{0, math.Copysign(0, -1), nan, 1.5, -2.25, math.Inf(1)}
		return nullOr(r, 0.1, func() any { return vals[r.IntN(len(vals))] })
	}},
	{name: "dec", id: 5, eq: eqInt, gen: func(r *rand.Rand, del bool) any {
		vals := []int64{0, 1, -1, 100, 12345, -999999999, 999999999}
		return nullOr(r, 0.1, func() any { return vals[r.IntN(len(vals))] })
	}},
	{name: "dt", id: 6, eq: eqInt, gen: func(r *rand.Rand, del bool) any {
		return nullOr(r, 0.1, func() any { return int64(19000 + r.IntN(8) - 4) })
	}},
	{name: "ts", id: 7, eq: eqInt, gen: func(r *rand.Rand, del bool) any {
		return nullOr(r, 0.1, func() any {
			v := int64(1_700_000_000_000_000 + 1000*r.IntN(6))
			if !del && r.IntN(4) == 0 {
				v += 7 // not representable in milliseconds
			}
			return v
		})
	}},
	{name: "s", id: 8, eq: eqString, gen: func(r *rand.Rand, del bool) any {
		vals := []string{"", "a", "tenant-1", "tenant-2", "ümlaut", "a\x00b"}
		return nullOr(r, 0.15, func() any { return vals[r.IntN(len(vals))] })
	}},
	{name: "b", id: 9, eq: eqBytes, gen: func(r *rand.Rand, del bool) any {
		vals := [][]byte{{}, {0}, {0, 0}, {1, 2, 3}, {0xff}}
		return nullOr(r, 0.1, func() any { return vals[r.IntN(len(vals))] })
	}},
	{name: "u", id: 10, eq: eqBytes, gen: func(r *rand.Rand, del bool) any {
		return nullOr(r, 0.1, func() any {
			u := make([]byte, 16)
			u[15] = byte(r.IntN(4))
			return u
		})
	}},
	{name: "st.k", id: 12, eq: eqInt, gen: func(r *rand.Rand, del bool) any {
		return nullOr(r, 0.2, func() any { return int64(r.IntN(3)) })
	}},
}

func colByName(name string) eqCol {
	for _, c := range eqCols {
		if c.name == name {
			return c
		}
	}
	panic(name)
}

// eqTableSchema is the table schema after promotion.
func eqTableSchema() *iceberg.Schema {
	return iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "dec", Type: iceberg.DecimalTypeOf(18, 2)},
		iceberg.NestedField{ID: 6, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 8, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 9, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 10, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 11, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 12, Name: "k", Type: iceberg.PrimitiveTypes.Int32},
		}}},
	)
}

type genRow map[string]any // column name → value in the table domain; "st" null when st.k is "structnull"

// dataFields returns the Arrow fields of a data file (pre-promotion types).
func dataFields(withIDs bool, omit string) []arrow.Field {
	id := func(n int) int {
		if withIDs {
			return n
		}
		return 0
	}
	all := []arrow.Field{
		fieldWithID("id", id(1), arrow.PrimitiveTypes.Int64, false),
		fieldWithID("i", id(2), arrow.PrimitiveTypes.Int32, true),
		fieldWithID("f", id(3), arrow.PrimitiveTypes.Float32, true),
		fieldWithID("d", id(4), arrow.PrimitiveTypes.Float64, true),
		fieldWithID("dec", id(5), &arrow.Decimal128Type{Precision: 9, Scale: 2}, true),
		fieldWithID("dt", id(6), arrow.FixedWidthTypes.Date32, true),
		fieldWithID("ts", id(7), &arrow.TimestampType{Unit: arrow.Microsecond}, true),
		fieldWithID("s", id(8), arrow.BinaryTypes.String, true),
		fieldWithID("b", id(9), arrow.BinaryTypes.Binary, true),
		fieldWithID("u", id(10), &arrow.FixedSizeBinaryType{ByteWidth: 16}, true),
		fieldWithID("st", id(11), arrow.StructOf(fieldWithID("k", id(12), arrow.PrimitiveTypes.Int32, true)), true),
	}
	return slices.DeleteFunc(all, func(f arrow.Field) bool { return f.Name == omit })
}

// deleteFields returns the Arrow fields of an equality delete file over
// cols (post-promotion types) plus an extra column.
func deleteFields(cols []string) []arrow.Field {
	types := map[string]arrow.Field{
		"i":    fieldWithID("i", 2, arrow.PrimitiveTypes.Int64, true),
		"f":    fieldWithID("f", 3, arrow.PrimitiveTypes.Float64, true),
		"d":    fieldWithID("d", 4, arrow.PrimitiveTypes.Float64, true),
		"dec":  fieldWithID("dec", 5, &arrow.Decimal128Type{Precision: 18, Scale: 2}, true),
		"dt":   fieldWithID("dt", 6, arrow.FixedWidthTypes.Date32, true),
		"ts":   fieldWithID("ts", 7, &arrow.TimestampType{Unit: arrow.Millisecond}, true),
		"s":    fieldWithID("s", 8, arrow.BinaryTypes.String, true),
		"b":    fieldWithID("b", 9, arrow.BinaryTypes.Binary, true),
		"u":    fieldWithID("u", 10, &arrow.FixedSizeBinaryType{ByteWidth: 16}, true),
		"st.k": fieldWithID("st", 11, arrow.StructOf(fieldWithID("k", 12, arrow.PrimitiveTypes.Int32, true)), true),
	}
	// The extra column comes first so key columns are not at fixed indexes.
	out := []arrow.Field{fieldWithID("extra", 1000, arrow.BinaryTypes.String, true)}
	for _, c := range cols {
		out = append(out, types[c])
	}
	return out
}

// appendValue appends v (table domain) to builder b of a file's column.
func appendValue(b array.Builder, col string, v any) {
	if col == "st.k" {
		sb := b.(*array.StructBuilder)
		if v == "structnull" {
			sb.AppendNull()
			return
		}
		sb.Append(true)
		appendValue(sb.FieldBuilder(0), "k", v)
		return
	}
	if v == nil {
		b.AppendNull()
		return
	}
	switch x := b.(type) {
	case *array.Int64Builder:
		x.Append(v.(int64))
	case *array.Int32Builder:
		x.Append(int32(v.(int64)))
	case *array.Float32Builder:
		x.Append(float32(v.(float64)))
	case *array.Float64Builder:
		x.Append(v.(float64))
	case *array.Decimal128Builder:
		x.Append(decimal128.FromI64(v.(int64)))
	case *array.Date32Builder:
		x.Append(arrow.Date32(v.(int64)))
	case *array.TimestampBuilder:
		us := v.(int64)
		if x.Type().(*arrow.TimestampType).Unit == arrow.Millisecond {
			us /= 1000
		}
		x.Append(arrow.Timestamp(us))
	case *array.StringBuilder:
		x.Append(v.(string))
	case *array.BinaryBuilder:
		x.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		x.Append(v.([]byte))
	default:
		panic(fmt.Sprintf("appendValue: %T", b))
	}
}

func genDataRows(r *rand.Rand, n int) []genRow {
	rows := make([]genRow, n)
	for i := range rows {
		row := genRow{"id": int64(i)}
		for _, c := range eqCols {
			row[c.name] = c.gen(r, false)
		}
		if r.IntN(8) == 0 {
			row["st.k"] = "structnull" // the parent struct is null: st.k reads as NULL
		}
		rows[i] = row
	}
	return rows
}

func writeDataFile(t testing.TB, rows []genRow, withIDs bool, omit string, rowsPerGroup int64) []byte {
	fields := dataFields(withIDs, omit)
	return writeParquet(t, fields, len(rows), rowsPerGroup, func(rb *array.RecordBuilder) {
		for _, row := range rows {
			for i, f := range fields {
				name := f.Name
				if name == "st" {
					name = "st.k"
				}
				appendValue(rb.Field(i), name, row[name])
			}
		}
	})
}

// genDeleteRows draws key tuples over cols: half copied from data rows (so
// matches happen), half fresh.
func genDeleteRows(r *rand.Rand, data []genRow, cols []string, n int) []genRow {
	rows := make([]genRow, n)
	for i := range rows {
		row := genRow{"extra": fmt.Sprintf("x%d", r.IntN(100))}
		src := data[r.IntN(len(data))]
		for _, c := range cols {
			if r.IntN(2) == 0 {
				v := src[c]
				if c == "ts" && v != nil && v.(int64)%1000 != 0 {
					v = v.(int64) - 7 // keep it millisecond-representable
				}
				if c == "f" || c == "d" {
					if f, ok := v.(float64); ok && math.IsNaN(f) {
						v = javaNaN
					}
				}
				row[c] = v
			} else {
				row[c] = colByName(c).gen(r, true)
			}
		}
		rows[i] = row
	}
	return rows
}

func writeDeleteFile(t testing.TB, rows []genRow, cols []string, rowsPerGroup int64, props ...parquet.WriterProperty) []byte {
	fields := deleteFields(cols)
	return writeParquet(t, fields, len(rows), rowsPerGroup, func(rb *array.RecordBuilder) {
		for _, row := range rows {
			rb.Field(0).(*array.StringBuilder).Append(row["extra"].(string))
			for i, c := range cols {
				v := row[c]
				if c == "st.k" && v == "structnull" {
					v = nil
				}
				appendValue(rb.Field(i+1), c, v)
			}
		}
	}, props...)
}

// valueOf is a row's value of column c as the table reads it.
func valueOf(row genRow, c string, missing map[string]any) any {
	if d, ok := missing[c]; ok {
		return d
	}
	v := row[c]
	if v == "structnull" {
		return nil
	}
	return v
}

// oracleEquality is the brute-force answer: positions of data rows whose
// tuple over cols equals some delete row's, with Iceberg equality.
func oracleEquality(data, dels []genRow, cols []string, missing map[string]any) []uint64 {
	var out []uint64
	for pos, d := range data {
		for _, q := range dels {
			match := true
			for _, c := range cols {
				a, b := valueOf(d, c, missing), valueOf(q, c, nil)
				if a == nil || b == nil {
					match = a == nil && b == nil
				} else {
					match = colByName(c).eq(a, b)
				}
				if !match {
					break
				}
			}
			if match {
				out = append(out, uint64(pos))
				break
			}
		}
	}
	return out
}

func ids(cols []string) []int {
	out := make([]int, len(cols))
	for i, c := range cols {
		out[i] = colByName(c).id
	}
	return out
}

var keySets = [][]string{
	{"i"}, {"f"}, {"d"}, {"dec"}, {"dt"}, {"ts"}, {"s"}, {"b"}, {"u"}, {"st.k"},
	{"s", "i"}, {"d", "ts", "s"}, {"u", "dec", "b"}, {"f", "st.k"},
}

func TestEqualityDeletesMatchTheBruteForceOracleAcrossTypes(t *testing.T) {
	sch := eqTableSchema()
	for _, withIDs := range []bool{true, false} {
		t.Run(fmt.Sprintf("dataFieldIDs=%v", withIDs), func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			data := genDataRows(r, 600)
			db := writeDataFile(t, data, withIDs, "", 128)
			fs := newMemFS()
			fs.put("data.parquet", db)
			d := DataFile{Path: "data.parquet", Size: int64(len(db)), RecordCount: int64(len(data))}
			var nm iceberg.NameMapping
			if !withIDs {
				nm = sch.NameMapping()
			}
			for k, cols := range keySets {
				var props []parquet.WriterProperty
				if k%2 == 0 {
					props = append(props, parquet.WithStoreDecimalAsInteger(true))
				}
				n := 25
				if len(cols) == 1 {
					n = 3 // small domains: a few rows so some data rows survive
				}
				dels := genDeleteRows(r, data, cols, n)
				b := writeDeleteFile(t, dels, cols, 16, props...)
				path := fmt.Sprintf("eq-%d.parquet", k)
				fs.put(path, b)
				f := File{Path: path, Size: int64(len(b)), Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: ids(cols)}
				got, err := EqualityDeleted(context.Background(), fs.open, d, f, sch, nm)
				if err != nil {
					t.Fatalf("%v: %v", cols, err)
				}
				want := oracleEquality(data, dels, cols, nil)
				if len(want) == 0 || len(want) == len(data) {
					t.Fatalf("%v: degenerate test data: %d of %d rows match", cols, len(want), len(data))
				}
				sameBitmap(t, strings.Join(cols, ","), got, want)
			}
		})
	}
}

func TestNaNMatchesNaNWhateverItsPayloadButNegativeZeroDoesNotMatchZero(t *testing.T) {
	sch := eqTableSchema()
	data := []genRow{{"id": int64(0), "d": goNaN}, {"id": int64(1), "d": 0.0}, {"id": int64(2), "d": math.Copysign(0, -1)}, {"id": int64(3), "d": nil}}
	db := writeDataFile(t, data, true, "", 10)
	fs := newMemFS()
	fs.put("data.parquet", db)
	d := DataFile{Path: "data.parquet", Size: int64(len(db)), RecordCount: 4}
	for _, c := range []struct {
		del  any
		want []uint64
	}{{javaNaN, []uint64{0}}, {0.0, []uint64{1}}, {math.Copysign(0, -1), []uint64{2}}, {nil, []uint64{3}}} {
		b := writeDeleteFile(t, []genRow{{"extra": "", "d": c.del}}, []string{"d"}, 10)
		fs.put("del.parquet", b)
		got, err := EqualityDeleted(context.Background(), fs.open, d, File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: []int{4}}, sch, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameBitmap(t, fmt.Sprint(c.del), got, c.want)
	}
}

func TestAnEqualityColumnMissingFromTheDataFileReadsAsNullOrItsInitialDefault(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	data := genDataRows(r, 200)
	db := writeDataFile(t, data, true, "s", 50) // a file written before column s existed
	fs := newMemFS()
	fs.put("data.parquet", db)
	d := DataFile{Path: "data.parquet", Size: int64(len(db)), RecordCount: int64(len(data))}
	cols := []string{"s", "i"}
	dels := []genRow{{"extra": "", "s": nil, "i": int64(1)}, {"extra": "", "s": "dflt", "i": int64(2)}, {"extra": "", "s": "a", "i": int64(3)}}
	b := writeDeleteFile(t, dels, cols, 10)
	fs.put("del.parquet", b)
	f := File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: ids(cols)}

	got, err := EqualityDeleted(context.Background(), fs.open, d, f, eqTableSchema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "missing column as NULL", got, oracleEquality(data, dels, cols, map[string]any{"s": nil}))

	withDefault := eqTableSchema()
	fields := withDefault.Fields()
	for i := range fields {
		if fields[i].Name == "s" {
			fields[i].InitialDefault = "dflt"
		}
	}
	withDefault = iceberg.NewSchema(2, fields...)
	got, err = EqualityDeleted(context.Background(), fs.open, d, f, withDefault, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := oracleEquality(data, dels, cols, map[string]any{"s": "dflt"})
	if len(want) == 0 {
		t.Fatal("degenerate: no row has i = 2")
	}
	sameBitmap(t, "missing column as initial-default", got, want)
}

func TestDeleteFilesWithoutFieldIDsResolveThroughTheNameMapping(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	data := genDataRows(r, 300)
	db := writeDataFile(t, data, true, "", 100)
	fs := newMemFS()
	fs.put("data.parquet", db)
	d := DataFile{Path: "data.parquet", Size: int64(len(db)), RecordCount: int64(len(data))}
	cols := []string{"s", "dt"}
	dels := genDeleteRows(r, data, cols, 30)
	fields := deleteFields(cols)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{} // no field ids
	}
	b := writeParquet(t, fields, len(dels), 8, func(rb *array.RecordBuilder) {
		for _, row := range dels {
			rb.Field(0).(*array.StringBuilder).Append(row["extra"].(string))
			for i, c := range cols {
				appendValue(rb.Field(i+1), c, row[c])
			}
		}
	})
	fs.put("del.parquet", b)
	got, err := EqualityDeleted(context.Background(), fs.open, d, File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: ids(cols)}, eqTableSchema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "by name", got, oracleEquality(data, dels, cols, nil))
}

func TestDataFileWithoutFieldIDsAndNoNameMappingIsRefused(t *testing.T) {
	data := genDataRows(rand.New(rand.NewPCG(1, 1)), 10)
	db := writeDataFile(t, data, false, "", 10)
	fs := newMemFS()
	fs.put("data.parquet", db)
	b := writeDeleteFile(t, []genRow{{"extra": "", "i": int64(1)}}, []string{"i"}, 10)
	fs.put("del.parquet", b)
	_, err := EqualityDeleted(context.Background(), fs.open, DataFile{Path: "data.parquet", RecordCount: 10},
		File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: []int{2}}, eqTableSchema(), nil)
	errContains(t, err, "data.parquet", "name mapping")
	if perr.KindOf(err) != perr.FailedPrecondition {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
}

func TestEqualityRequestsThatCannotBindAreInvalid(t *testing.T) {
	fs := newMemFS()
	d := DataFile{Path: "data.parquet"}
	for _, c := range []struct {
		f    File
		kind perr.Kind
		msg  string
	}{
		{File{Path: "e.parquet", Content: EqualityDeletes, Format: FormatParquet}, perr.InvalidArgument, "no equality field ids"},
		{File{Path: "e.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: []int{99}}, perr.InvalidArgument, "99"},
		{File{Path: "e.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: []int{11}}, perr.InvalidArgument, "not a primitive"},
		{File{Path: "e.avro", Content: EqualityDeletes, Format: FormatAvro, EqualityFieldIDs: []int{2}}, perr.FailedPrecondition, "AVRO"},
		{File{Path: "e.orc", Content: EqualityDeletes, Format: FormatORC, EqualityFieldIDs: []int{2}}, perr.FailedPrecondition, "ORC"},
	} {
		_, err := EqualityDeleted(context.Background(), fs.open, d, c.f, eqTableSchema(), nil)
		errContains(t, err, c.f.Path, c.msg)
		if perr.KindOf(err) != c.kind {
			t.Fatalf("%s: kind %v, want %v (%v)", c.msg, perr.KindOf(err), c.kind, err)
		}
	}
}

func TestAnEqualityDeleteFileLackingAKeyColumnIsCorrupt(t *testing.T) {
	data := genDataRows(rand.New(rand.NewPCG(1, 1)), 10)
	db := writeDataFile(t, data, true, "", 10)
	fs := newMemFS()
	fs.put("data.parquet", db)
	b := writeDeleteFile(t, []genRow{{"extra": "", "i": int64(1)}}, []string{"i"}, 10)
	fs.put("del.parquet", b)
	_, err := EqualityDeleted(context.Background(), fs.open, DataFile{Path: "data.parquet", RecordCount: 10},
		File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: []int{2, 8}}, eqTableSchema(), nil)
	errContains(t, err, "del.parquet", "field id 8")
	if perr.KindOf(err) != perr.Corrupt {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
}

func TestMalformedEqualityInputsAreErrorsNamingTheFileNotPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	data := genDataRows(r, 50)
	goodData := writeDataFile(t, data, true, "", 16)
	cols := []string{"s", "dec", "ts"}
	goodDel := writeDeleteFile(t, genDeleteRows(r, data, cols, 10), cols, 4)
	for i := 0; i < 400; i++ {
		db, eb := slices.Clone(goodData), slices.Clone(goodDel)
		victim := &db
		if i%2 == 1 {
			victim = &eb
		}
		b := *victim
		for j := 0; j <= i%5; j++ {
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		}
		if i%7 == 0 {
			b = b[:r.IntN(len(b))]
		}
		*victim = b
		fs := newMemFS()
		fs.put("data.parquet", db)
		fs.put("del.parquet", eb)
		_, err := EqualityDeleted(context.Background(), fs.open, DataFile{Path: "data.parquet", RecordCount: int64(len(data))},
			File{Path: "del.parquet", Content: EqualityDeletes, Format: FormatParquet, EqualityFieldIDs: ids(cols)}, eqTableSchema(), nil)
		if err != nil && !strings.Contains(err.Error(), "data.parquet") && !strings.Contains(err.Error(), "del.parquet") {
			t.Fatalf("error names no file: %v", err)
		}
	}
}
