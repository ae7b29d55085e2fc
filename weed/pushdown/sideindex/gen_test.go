package sideindex

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// testCol is one generated column: the type the file stores (arrow) and
// the table's type (ice), which may be wider (int→long, float→double).
type testCol struct {
	name  string
	arrow arrow.DataType
	ice   iceberg.Type
	gen   func(r *rand.Rand, row int64) any // nil: NULL
}

var odd = []float64{math.NaN(), 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1.5, -1.5}

var texts = []string{"", "a", "ab", "abc", "Zürich", "東京", "naïve", "\x00", "\u00ff\u00ff", strings.Repeat("long-", 30), "k", "kz", "k\xff",
	"ZÜRICH", "upstream TimeOut after 3s", "timeout", "\u212aelvin", "50%_off", "東京都庁"}

func nullOr(r *rand.Rand, p float64, v any) any {
	if r.Float64() < p {
		return nil
	}
	return v
}

func floatish(r *rand.Rand, row int64) float64 {
	if r.IntN(12) == 0 {
		return odd[r.IntN(len(odd))]
	}
	return float64(r.IntN(400)-200) / 4
}

func testCols() []testCol {
	return []testCol{
		{"i32", arrow.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32, func(r *rand.Rand, g int64) any { return nullOr(r, 0.05, int32(r.IntN(500)-250)) }},
		{"i64", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.04, int64(r.Uint64()>>uint(r.IntN(64)))*int64(1-2*r.IntN(2)))
		}},
		{"sorted", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any { return nullOr(r, 0.01, g*3) }},
		{"i32long", arrow.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.05, int32(r.IntN(math.MaxInt32))*int32(1-2*r.IntN(2)))
		}},
		{"f32", arrow.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float32, func(r *rand.Rand, g int64) any { return nullOr(r, 0.05, float32(floatish(r, g))) }},
		{"f32dbl", arrow.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.05, float32(floatish(r, g))+float32(0.1))
		}},
		{"f64", arrow.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Float64, func(r *rand.Rand, g int64) any { return nullOr(r, 0.05, floatish(r, g)) }},
		{"str", arrow.BinaryTypes.String, iceberg.PrimitiveTypes.String, func(r *rand.Rand, g int64) any {
			s := texts[r.IntN(len(texts))]
			if r.IntN(3) == 0 {
				s += strconv.Itoa(r.IntN(40))
			}
			return nullOr(r, 0.05, s)
		}},
		{"bin", arrow.BinaryTypes.Binary, iceberg.PrimitiveTypes.Binary, func(r *rand.Rand, g int64) any {
			b := make([]byte, r.IntN(5))
			for i := range b {
				b[i] = byte(r.IntN(4)) * 85
			}
			return nullOr(r, 0.05, b)
		}},
		{"dec9", &arrow.Decimal128Type{Precision: 9, Scale: 2}, iceberg.DecimalTypeOf(9, 2), func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.05, decimal128.FromI64(r.Int64N(2000)-1000))
		}},
		{"dec30", &arrow.Decimal128Type{Precision: 30, Scale: 3}, iceberg.DecimalTypeOf(30, 3), func(r *rand.Rand, g int64) any {
			v := new(big.Int).Mul(big.NewInt(r.Int64N(300)-150), big.NewInt(1_000_000_000_007))
			return nullOr(r, 0.05, decimal128.FromBigInt(v))
		}},
		{"d", arrow.FixedWidthTypes.Date32, iceberg.PrimitiveTypes.Date, func(r *rand.Rand, g int64) any { return nullOr(r, 0.03, arrow.Date32(19000+g/50)) }},
		{"ts", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, iceberg.PrimitiveTypes.TimestampTz, func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.03, arrow.Timestamp(1_700_000_000_000_000+r.Int64N(1_000_000)*997))
		}},
		{"tsns", &arrow.TimestampType{Unit: arrow.Nanosecond}, iceberg.PrimitiveTypes.TimestampNs, func(r *rand.Rand, g int64) any {
			return nullOr(r, 0.03, arrow.Timestamp(1_700_000_000_000_000_000+g*1_000_003))
		}},
		{"b", arrow.FixedWidthTypes.Boolean, iceberg.PrimitiveTypes.Bool, func(r *rand.Rand, g int64) any { return nullOr(r, 0.05, r.IntN(3) == 0) }},
		{"uid", extensions.NewUUIDType(), iceberg.PrimitiveTypes.UUID, func(r *rand.Rand, g int64) any {
			var u uuid.UUID
			u[0], u[15] = byte(r.IntN(3)), byte(r.IntN(5))
			return nullOr(r, 0.05, u)
		}},
		{"sparse", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			if (g/300)%3 != 1 {
				return nil // long NULL runs: all-null pages
			}
			return int64(r.IntN(50))
		}},
	}
}

// layout is how a generated file is written.
type layout struct {
	name      string
	pageIndex bool
	bloom     bool // native blooms on every column
	dict      bool
	rowGroup  int64
	pageBytes int64
}

var layouts = []layout{
	{name: "no page index, dictionary, small pages", dict: true, rowGroup: 700, pageBytes: 300},
	{name: "page index and blooms, plain", pageIndex: true, bloom: true, rowGroup: 1000, pageBytes: 512},
	{name: "no page index, one row group", rowGroup: 1 << 20, pageBytes: 1024},
}

func schemasOf(cols []testCol) (*arrow.Schema, *iceberg.Schema) {
	var af []arrow.Field
	var nf []iceberg.NestedField
	for i, c := range cols {
		id := i + 1
		af = append(af, arrow.Field{Name: c.name, Type: c.arrow, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})})
		nf = append(nf, iceberg.NestedField{ID: id, Name: c.name, Type: c.ice})
	}
	return arrow.NewSchema(af, nil), iceberg.NewSchema(0, nf...)
}

// appendAny appends v (nil: NULL) with the builder's own typed Append.
func appendAny(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	if lb, ok := b.(*array.ListBuilder); ok {
		lb.Append(true)
		for _, e := range v.([]any) {
			appendAny(lb.ValueBuilder(), e)
		}
		return
	}
	reflect.ValueOf(b).MethodByName("Append").Call([]reflect.Value{reflect.ValueOf(v)})
}

// writeFile writes rows of cols with layout lay (same seed: same rows).
func writeFile(t testing.TB, cols []testCol, lay layout, rows int64, seed uint64) []byte {
	t.Helper()
	as, _ := schemasOf(cols)
	r := rand.New(rand.NewPCG(seed, 99))
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for g := int64(0); g < rows; g++ {
		for i, c := range cols {
			appendAny(b.Field(i), c.gen(r, g))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(lay.rowGroup),
		parquet.WithDataPageSize(lay.pageBytes), parquet.WithBatchSize(32), parquet.WithDictionaryDefault(lay.dict),
		parquet.WithPageIndexEnabled(lay.pageIndex), parquet.WithStoreDecimalAsInteger(true),
	}
	if lay.bloom {
		for _, c := range cols {
			opts = append(opts, parquet.WithBloomFilterEnabledFor(c.name, true), parquet.WithBloomFilterNDVFor(c.name, 64))
		}
	}
	tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, lay.rowGroup, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// memSource serves a file from memory.
type memSource []byte

func (m memSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m)) {
		return 0, fmt.Errorf("offset %d outside %d bytes", off, len(m))
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, fmt.Errorf("short read")
	}
	return n, nil
}
func (m memSource) Size() int64 { return int64(len(m)) }

// testFile is a generated data file, its footer, table schema and oracle.
type testFile struct {
	path   string
	data   []byte
	footer *footer.Footer
	schema *iceberg.Schema
	df     *oracle.File
}

func loadFile(t testing.TB, path string, data []byte, s *iceberg.Schema) *testFile {
	t.Helper()
	f, err := footer.Load(context.Background(), footer.Identity{Path: path, Size: int64(len(data))}, memSource(data))
	if err != nil {
		t.Fatal(err)
	}
	df, err := oracle.DecodeFile(data, s)
	if err != nil {
		t.Fatal(err)
	}
	return &testFile{path: path, data: data, footer: f, schema: s, df: df}
}

func (f *testFile) input(t testing.TB, fieldID int, params map[string]string) Input {
	t.Helper()
	field, ok := f.schema.FindFieldByID(fieldID)
	if !ok {
		t.Fatalf("no field %d", fieldID)
	}
	col := f.footer.Meta.Schema.ColumnIndexByName(field.Name)
	for i := 0; col < 0 && i < f.footer.Meta.Schema.NumColumns(); i++ {
		if f.footer.Meta.Schema.Column(i).ColumnPath()[0] == field.Name {
			col = i // a list's element column
		}
	}
	if col < 0 {
		t.Fatalf("no column %s", field.Name)
	}
	return Input{File: f.path, Identity: footer.IdentityDir(f.footer.ID.Size, f.footer.NumRows(), f.footer.Hash), Footer: f.footer,
		Source: memSource(f.data), FieldID: fieldID, Type: field.Type, Column: col, Params: params}
}

func wantOf(in Input, kind string) Header {
	return Header{Kind: kind, FieldID: in.FieldID, IcebergType: in.Type.String(), DataFile: in.File, Identity: in.Identity,
		Params: in.Params, Rows: in.Footer.NumRows()}
}

// literalOf turns a Value of table type t into an Iceberg literal.
func literalOf(t iceberg.Type, v value.Value) (iceberg.Literal, bool) {
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return iceberg.BoolLiteral(v.I != 0), true
	case iceberg.Int32Type:
		if v.I < math.MinInt32 || v.I > math.MaxInt32 {
			return nil, false
		}
		return iceberg.Int32Literal(int32(v.I)), true
	case iceberg.Int64Type:
		return iceberg.Int64Literal(v.I), true
	case iceberg.Float32Type:
		return iceberg.Float32Literal(float32(v.F)), true
	case iceberg.Float64Type:
		return iceberg.Float64Literal(v.F), true
	case iceberg.StringType:
		return iceberg.StringLiteral(string(v.B)), true
	case iceberg.BinaryType:
		return iceberg.BinaryLiteral(v.B), true
	case iceberg.UUIDType:
		if len(v.B) != 16 {
			return nil, false
		}
		return iceberg.UUIDLiteral(uuid.UUID(v.B)), true
	case iceberg.DateType:
		return iceberg.DateLiteral(v.I), true
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return iceberg.TimestampLiteral(v.I), true
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return iceberg.TimestampNsLiteral(v.I), true
	case iceberg.DecimalType:
		return iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(v.D), Scale: tt.Scale()}), true
	}
	return nil, false
}

// pickValue draws a literal value: a stored value, its neighbour, or a
// special (float oddities, texts, extremes).
func pickValue(r *rand.Rand, t iceberg.Type, cells []oracle.Cell) value.Value {
	var v value.Value
	found := false
	for i := 0; i < 30 && !found; i++ {
		if c := cells[r.IntN(len(cells))]; !c.Null {
			v, found = c.V, true
		}
	}
	k, _ := value.KindOf(t)
	if !found || r.IntN(6) == 0 {
		switch k {
		case value.Float:
			return value.OfFloat(odd[r.IntN(len(odd))])
		case value.Bytes:
			if _, ok := t.(iceberg.UUIDType); !ok {
				return value.OfString(texts[r.IntN(len(texts))])
			}
		case value.Int:
			return value.OfInt([]int64{math.MinInt32, math.MaxInt32, 0, -1, math.MaxInt64, math.MinInt64}[r.IntN(6)])
		}
		if !found {
			return v
		}
	}
	if r.IntN(3) == 0 {
		switch v.K {
		case value.Int:
			v.I += int64(r.IntN(3) - 1)
		case value.Float:
			v.F = math.Nextafter(v.F, math.Inf(1-2*r.IntN(2)))
		case value.Decimal:
			v.D = new(big.Int).Add(v.D, big.NewInt(int64(r.IntN(3)-1)))
		case value.Bytes:
			if _, ok := t.(iceberg.UUIDType); ok {
				b := bytes.Clone(v.B)
				b[15] += byte(r.IntN(3)) - 1
				v.B = b
			} else if len(v.B) > 0 && r.IntN(2) == 0 {
				v.B = v.B[:r.IntN(len(v.B))]
			} else {
				v.B = append(bytes.Clone(v.B), byte(r.IntN(256)))
			}
		}
	}
	return v
}

// randomLeaf builds and binds one random leaf on field f; nil when the
// draw does not bind (e.g. a literal that is not valid for the type).
func randomLeaf(r *rand.Rand, s *iceberg.Schema, f iceberg.NestedField, cells []oracle.Cell) *predicate.Leaf {
	if lt, ok := f.Type.(*iceberg.ListType); ok {
		return randomListLeaf(r, s, f, lt, cells)
	}
	l := &predicate.Leaf{FieldID: f.ID, Negated: r.IntN(3) == 0}
	lit := func() iceberg.Literal {
		v := pickValue(r, f.Type, cells)
		if v.K == value.Invalid {
			return nil
		}
		x, _ := literalOf(f.Type, v)
		return x
	}
	_, isString := f.Type.(iceberg.StringType)
	switch n := r.IntN(17); {
	case n >= 14 && isString:
		x, _ := lit().(iceberg.StringLiteral)
		l.Op = []predicate.Op{predicate.OpLike, predicate.OpILike}[r.IntN(2)]
		l.Raw = []iceberg.Literal{iceberg.StringLiteral(randomPattern(r, string(x), l.Op == predicate.OpILike))}
	case n < 7:
		l.Op = []predicate.Op{predicate.OpEq, predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq, predicate.OpGtEq}[n]
		l.Raw = []iceberg.Literal{lit()}
	case n < 9:
		l.Op = predicate.OpIn
		for k := 1 + r.IntN(5); k > 0; k-- {
			l.Raw = append(l.Raw, lit())
		}
	case n < 10:
		l.Op = predicate.OpIsNull
	case n < 12 && value.IsFloat(f.Type):
		l.Op = predicate.OpIsNaN
	case n < 12 && isString:
		l.Op = predicate.OpStartsWith
		x := lit()
		if s, ok := x.(iceberg.StringLiteral); ok {
			runes := []rune(string(s))
			x = iceberg.StringLiteral(string(runes[:r.IntN(len(runes)+1)]))
		}
		l.Raw = []iceberg.Literal{x}
	default:
		l.Op = predicate.OpEq
		l.Raw = []iceberg.Literal{lit()}
	}
	for _, x := range l.Raw {
		if x == nil {
			return nil
		}
	}
	e, err := predicate.Bind(l, s, predicate.DefaultLimits)
	if err != nil {
		return nil
	}
	bl, _ := e.(*predicate.Leaf)
	return bl
}

// randomPattern is a LIKE pattern drawn from s: a piece of it between
// wildcards, sometimes with a '_' inside, its case changed for ILIKE.
func randomPattern(r *rand.Rand, s string, ilike bool) string {
	rs := []rune(s)
	i := r.IntN(len(rs) + 1)
	j := i + r.IntN(len(rs)-i+1)
	piece := rs[i:j]
	if ilike && r.IntN(2) == 0 {
		for k := range piece {
			piece[k] = unicode.ToUpper(piece[k])
		}
	}
	sub := predicate.EscapeLike(string(piece))
	if len(piece) > 2 && r.IntN(4) == 0 {
		k := 1 + r.IntN(len(piece)-2)
		sub = predicate.EscapeLike(string(piece[:k])) + "_" + predicate.EscapeLike(string(piece[k+1:]))
	}
	switch r.IntN(5) {
	case 0:
		return sub + "%"
	case 1:
		return "%" + sub
	case 2:
		return sub
	case 3:
		return "%" + sub + "%" + string(rs[j:min(len(rs), j+1)])
	}
	return "%" + sub + "%"
}

func likeRaw(p string) []iceberg.Literal { return []iceberg.Literal{iceberg.StringLiteral(p)} }

// randomListLeaf is ARRAY_CONTAINS(f, v) or its negation, v a stored
// element (or a draw for the element type).
func randomListLeaf(r *rand.Rand, s *iceberg.Schema, f iceberg.NestedField, lt *iceberg.ListType, cells []oracle.Cell) *predicate.Leaf {
	var elems []oracle.Cell
	for i := 0; i < 20; i++ {
		if c := cells[r.IntN(len(cells))]; !c.Null {
			for _, e := range c.V.L {
				elems = append(elems, oracle.Cell{V: e, Null: e.K == value.Invalid})
			}
		}
	}
	if len(elems) == 0 {
		elems = []oracle.Cell{{Null: true}}
	}
	v := pickValue(r, lt.Element, elems)
	if v.K == value.Invalid {
		return nil
	}
	x, ok := literalOf(lt.Element, v)
	if !ok {
		return nil
	}
	e, err := predicate.Bind(&predicate.Leaf{FieldID: f.ID, Op: predicate.OpArrayContains, Negated: r.IntN(3) == 0, Raw: []iceberg.Literal{x}}, s, predicate.DefaultLimits)
	if err != nil {
		return nil
	}
	l, _ := e.(*predicate.Leaf)
	return l
}

// listCols are list columns: NULL lists, empty lists, NULL elements,
// duplicate elements, non-ASCII text, NaN and signed zeros.
func listCols() []testCol {
	list := func(elem func(r *rand.Rand) any) func(r *rand.Rand, g int64) any {
		return func(r *rand.Rand, g int64) any {
			switch r.IntN(10) {
			case 0:
				return nil
			case 1:
				return []any{}
			}
			out := []any{}
			for n := 1 + r.IntN(4); n > 0; n-- {
				if r.IntN(12) == 0 {
					out = append(out, nil)
				} else {
					out = append(out, elem(r))
				}
				if r.IntN(8) == 0 {
					out = append(out, out[len(out)-1]) // a duplicate
				}
			}
			return out
		}
	}
	elemField := func(id int, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: "element", Type: t, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})}
	}
	return []testCol{
		{"tags", arrow.ListOfField(elemField(101, arrow.BinaryTypes.String)), &iceberg.ListType{ElementID: 101, Element: iceberg.PrimitiveTypes.String},
			list(func(r *rand.Rand) any { return texts[r.IntN(len(texts))] })},
		{"nums", arrow.ListOfField(elemField(102, arrow.PrimitiveTypes.Float64)), &iceberg.ListType{ElementID: 102, Element: iceberg.PrimitiveTypes.Float64},
			list(func(r *rand.Rand) any { return floatish(r, 0) })},
		{"ints", arrow.ListOfField(elemField(103, arrow.PrimitiveTypes.Int32)), &iceberg.ListType{ElementID: 103, Element: iceberg.PrimitiveTypes.Int32},
			list(func(r *rand.Rand) any { return int32(r.IntN(30)) })},
	}
}
