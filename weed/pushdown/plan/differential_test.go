package plan

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

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

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// genColumn describes one generated column.
type genColumn struct {
	id    int
	name  string
	arrow arrow.DataType
	ice   iceberg.Type
	gen   func(r *rand.Rand, g int64) any // nil = null
}

func fieldMeta(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})
}

var specialFloats = []float64{math.NaN(), 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1e-300, -1}

func maybeNull(r *rand.Rand, p float64, v any) any {
	if r.Float64() < p {
		return nil
	}
	return v
}

var words = []string{"alpha", "beta", "gamma", "délta", "日本語", "zeta", "", "a", "ab", "abc", "abd", "the-quick-brown-fox-jumps-over", "\u00ff\u00ff", "\x7f"}

func genColumns() []genColumn {
	return []genColumn{
		{1, "i32", arrow.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32, func(r *rand.Rand, g int64) any { return maybeNull(r, 0.03, int32(g*3-1000)) }},
		{2, "i64", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, int64(r.IntN(2_000_000))-1_000_000)
		}},
		{3, "f32", arrow.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float32, func(r *rand.Rand, g int64) any {
			if r.Float64() < 0.05 {
				return float32(specialFloats[r.IntN(len(specialFloats))])
			}
			return maybeNull(r, 0.05, float32(r.NormFloat64()*100))
		}},
		{4, "f64", arrow.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Float64, func(r *rand.Rand, g int64) any {
			if r.Float64() < 0.03 {
				return specialFloats[r.IntN(len(specialFloats))]
			}
			return maybeNull(r, 0.03, float64(g/100)+r.Float64())
		}},
		{5, "str", arrow.BinaryTypes.String, iceberg.PrimitiveTypes.String, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.04, fmt.Sprintf("k%03d-%s%d", g/300, words[r.IntN(len(words))], r.IntN(50)))
		}},
		{6, "bin", arrow.BinaryTypes.Binary, iceberg.PrimitiveTypes.Binary, func(r *rand.Rand, g int64) any {
			b := make([]byte, r.IntN(6))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return maybeNull(r, 0.05, b)
		}},
		{7, "b", arrow.FixedWidthTypes.Boolean, iceberg.PrimitiveTypes.Bool, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, (g/500)%2 == 0 || r.IntN(10) == 0)
		}},
		{8, "d", arrow.FixedWidthTypes.Date32, iceberg.PrimitiveTypes.Date, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.02, arrow.Date32(18000+g/7))
		}},
		{9, "ts", &arrow.TimestampType{Unit: arrow.Microsecond}, iceberg.PrimitiveTypes.Timestamp, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.02, arrow.Timestamp(1_700_000_000_000_000+g*1_000_003))
		}},
		{10, "tstz", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, iceberg.PrimitiveTypes.TimestampTz, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, arrow.Timestamp(r.Int64N(4_000_000_000_000_000)-1_000_000_000_000_000))
		}},
		{11, "tsns", &arrow.TimestampType{Unit: arrow.Nanosecond}, iceberg.PrimitiveTypes.TimestampNs, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.02, arrow.Timestamp(1_700_000_000_000_000_000+g*1_000_000_007))
		}},
		{12, "dec9", &arrow.Decimal128Type{Precision: 9, Scale: 2}, iceberg.DecimalTypeOf(9, 2), func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, decimal128.FromI64(r.Int64N(200_000)-100_000))
		}},
		{13, "dec20", &arrow.Decimal128Type{Precision: 20, Scale: 4}, iceberg.DecimalTypeOf(20, 4), func(r *rand.Rand, g int64) any {
			v := new(big.Int).Mul(big.NewInt(g-1800), big.NewInt(1_000_000_007_000))
			return maybeNull(r, 0.05, decimal128.FromBigInt(v))
		}},
		{14, "uid", extensions.NewUUIDType(), iceberg.PrimitiveTypes.UUID, func(r *rand.Rand, g int64) any {
			var u uuid.UUID
			for i := range u {
				u[i] = byte(r.IntN(256))
			}
			u[0] = byte(g / 15)
			return maybeNull(r, 0.05, u)
		}},
		{15, "tm", arrow.FixedWidthTypes.Time64us, iceberg.PrimitiveTypes.Time, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, arrow.Time64(r.Int64N(86_400_000_000)))
		}},
		{16, "u8", arrow.PrimitiveTypes.Uint8, iceberg.PrimitiveTypes.Int32, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, uint8(r.IntN(256)))
		}},
		{17, "u32", arrow.PrimitiveTypes.Uint32, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.05, uint32(r.Int64N(4_294_967_296)))
		}},
		{18, "sparse", arrow.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32, func(r *rand.Rand, g int64) any {
			if (g/400)%3 != 1 {
				return nil // long all-null runs: all-null pages
			}
			return int32(r.IntN(1000))
		}},
		{19, "cat", arrow.BinaryTypes.String, iceberg.PrimitiveTypes.String, func(r *rand.Rand, g int64) any {
			return maybeNull(r, 0.02, []string{"red", "green", "blue", "cyan", "magenta", "Red"}[r.IntN(6)])
		}},
	}
}

func genSchemas(cols []genColumn) (*arrow.Schema, *iceberg.Schema) {
	var af []arrow.Field
	var nf []iceberg.NestedField
	for _, c := range cols {
		af = append(af, arrow.Field{Name: c.name, Type: c.arrow, Nullable: true, Metadata: fieldMeta(c.id)})
		nf = append(nf, iceberg.NestedField{ID: c.id, Name: c.name, Type: c.ice})
	}
	return arrow.NewSchema(af, nil), iceberg.NewSchema(0, nf...)
}

func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Uint8Builder:
		bb.Append(v.(uint8))
	case *array.Uint32Builder:
		bb.Append(v.(uint32))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Date32Builder:
		bb.Append(v.(arrow.Date32))
	case *array.TimestampBuilder:
		bb.Append(v.(arrow.Timestamp))
	case *array.Time64Builder:
		bb.Append(v.(arrow.Time64))
	case *array.Decimal128Builder:
		bb.Append(v.(decimal128.Num))
	case *extensions.UUIDBuilder:
		bb.Append(v.(uuid.UUID))
	default:
		panic(fmt.Sprintf("no builder for %T", b))
	}
}

// variant is one way of writing the same rows.
type variant struct {
	name         string
	pageIndex    bool
	bloom        []string
	pageBytes    int64
	rowGroup     int64
	decimalAsInt bool
	noStats      []string // columns written without statistics
	dictionary   bool
}

var variants = []variant{
	{name: "page-index+bloom, small pages", pageIndex: true, bloom: []string{"i64", "str", "cat", "dec20", "uid", "d", "ts", "u32", "bin", "tstz"}, pageBytes: 256, rowGroup: 1000, decimalAsInt: true, dictionary: true},
	{name: "no page index, no bloom", pageIndex: false, pageBytes: 1 << 20, rowGroup: 700},
	{name: "page-index, plain encoding, some stats off", pageIndex: true, pageBytes: 512, rowGroup: 1500, noStats: []string{"i32", "str"}},
	{name: "one row group, many pages", pageIndex: true, bloom: []string{"i32", "f64", "dec9"}, pageBytes: 128, rowGroup: 1 << 20, decimalAsInt: true},
}

func writeVariant(t testing.TB, cols []genColumn, v variant, rows int64, seed uint64) []byte {
	t.Helper()
	as, _ := genSchemas(cols)
	r := rand.New(rand.NewPCG(seed, 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for g := int64(0); g < rows; g++ {
		for i, c := range cols {
			appendValue(b.Field(i), c.gen(r, g))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(v.rowGroup),
		parquet.WithDataPageSize(v.pageBytes),
		parquet.WithBatchSize(32),
		parquet.WithDictionaryDefault(v.dictionary),
		parquet.WithPageIndexEnabled(v.pageIndex),
		parquet.WithStoreDecimalAsInteger(v.decimalAsInt),
	}
	for _, c := range v.bloom {
		opts = append(opts, parquet.WithBloomFilterEnabledFor(c, true), parquet.WithBloomFilterNDVFor(c, v.rowGroup))
	}
	for _, c := range v.noStats {
		opts = append(opts, parquet.WithStatsFor(c, false))
	}
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(as, &buf, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifestStatsOf computes Iceberg-style metrics from decoded data: bounds
// of strings and binaries truncated to 16 bytes (upper incremented), as
// Iceberg writers do.
func manifestStatsOf(t testing.TB, df *decodedFile, s *iceberg.Schema) ManifestStats {
	st := ManifestStats{Lower: map[int][]byte{}, Upper: map[int][]byte{}, Nulls: map[int]int64{}, NaNs: map[int]int64{}, Values: map[int]int64{}}
	for id, cells := range df.Cols {
		f, _ := s.FindFieldByID(id)
		var lo, hi *value.Value
		var nulls, nans int64
		for _, c := range cells {
			switch {
			case c.Null:
				nulls++
			case c.V.IsNaN():
				nans++
			default:
				v := c.V
				if lo == nil {
					lo, hi = &v, &v
					continue
				}
				if cmp, ok := value.Compare(v, *lo); ok && cmp < 0 {
					lo = &v
				}
				if cmp, ok := value.Compare(v, *hi); ok && cmp > 0 {
					hi = &v
				}
			}
		}
		st.Nulls[id], st.Values[id] = nulls, int64(len(cells))
		if value.IsFloat(f.Type) {
			st.NaNs[id] = nans
		}
		if lo == nil {
			continue
		}
		l, u := *lo, *hi
		if l.K == value.Bytes && len(l.B) > 16 {
			l = value.TruncateBytes(l, 16)
		}
		if u.K == value.Bytes && len(u.B) > 16 {
			up, ok := successor(u.B[:16])
			if !ok {
				continue
			}
			u = value.OfBytes(up)
		}
		lb, err1 := toLiteral(f.Type, l).MarshalBinary()
		ub, err2 := toLiteral(f.Type, u).MarshalBinary()
		if err1 != nil || err2 != nil {
			t.Fatalf("serialize bounds of %s: %v %v", f.Name, err1, err2)
		}
		st.Lower[id], st.Upper[id] = lb, ub
	}
	return st
}

// toLiteral converts an oracle value back to an Iceberg literal of type t.
func toLiteral(t iceberg.Type, v value.Value) iceberg.Literal {
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return iceberg.BoolLiteral(v.I != 0)
	case iceberg.Int32Type:
		return iceberg.Int32Literal(int32(v.I))
	case iceberg.Int64Type:
		if v.K == value.Uint {
			return iceberg.Int64Literal(int64(v.U))
		}
		return iceberg.Int64Literal(v.I)
	case iceberg.Float32Type:
		return iceberg.Float32Literal(float32(v.F))
	case iceberg.Float64Type:
		return iceberg.Float64Literal(v.F)
	case iceberg.StringType:
		return iceberg.StringLiteral(string(v.B))
	case iceberg.BinaryType:
		return iceberg.BinaryLiteral(v.B)
	case iceberg.FixedType:
		return iceberg.FixedLiteral(v.B)
	case iceberg.UUIDType:
		var u uuid.UUID
		copy(u[:], v.B)
		return iceberg.UUIDLiteral(u)
	case iceberg.DateType:
		return iceberg.DateLiteral(v.I)
	case iceberg.TimeType:
		return iceberg.TimeLiteral(v.I)
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return iceberg.TimestampLiteral(v.I)
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return iceberg.TimestampNsLiteral(v.I)
	case iceberg.DecimalType:
		return iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(v.D), Scale: tt.Scale()})
	}
	panic(fmt.Sprintf("toLiteral: %s", t))
}

// randomLiteral draws a literal for field f: usually a value of the data,
// sometimes a neighbour, an extreme or a special float.
func randomLiteral(r *rand.Rand, f iceberg.NestedField, cells []oracle.Cell) iceberg.Literal {
	var v value.Value
	found := false
	for tries := 0; tries < 20 && !found; tries++ {
		c := cells[r.IntN(len(cells))]
		if !c.Null {
			v, found = c.V, true
		}
	}
	if !found || r.IntN(8) == 0 {
		switch f.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return toLiteral(f.Type, value.OfFloat(specialFloats[r.IntN(len(specialFloats))]))
		case iceberg.StringType:
			return iceberg.StringLiteral(words[r.IntN(len(words))])
		}
		if !found {
			return toLiteral(f.Type, zeroOf(f.Type))
		}
	}
	switch r.IntN(4) {
	case 0: // neighbour
		switch v.K {
		case value.Int:
			v.I += int64(r.IntN(3) - 1)
		case value.Float:
			v.F = math.Nextafter(v.F, math.Inf(r.IntN(2)*2-1))
		case value.Bytes:
			switch f.Type.(type) {
			case iceberg.FixedType, iceberg.UUIDType:
				if len(v.B) > 0 {
					b := append([]byte{}, v.B...)
					b[len(b)-1] += byte(r.IntN(3)) - 1
					v.B = b
				}
				return toLiteral(f.Type, v)
			}
			if len(v.B) > 0 && r.IntN(2) == 0 {
				v.B = v.B[:r.IntN(len(v.B))]
			} else {
				v.B = append(append([]byte{}, v.B...), byte(r.IntN(256)))
			}
		case value.Decimal:
			v.D = new(big.Int).Add(v.D, big.NewInt(int64(r.IntN(3)-1)))
		}
	}
	if _, isString := f.Type.(iceberg.StringType); isString && !isValidUTF8Prefix(v.B) {
		v.B = []byte("x")
	}
	if u, ok := f.Type.(iceberg.Int32Type); ok {
		_ = u
		if v.I > math.MaxInt32 || v.I < math.MinInt32 {
			v.I = 0
		}
	}
	return toLiteral(f.Type, v)
}

func isValidUTF8Prefix(b []byte) bool { return string([]rune(string(b))) == string(b) }

func zeroOf(t iceberg.Type) value.Value {
	switch t.(type) {
	case iceberg.BooleanType:
		return value.OfBool(false)
	case iceberg.Float32Type, iceberg.Float64Type:
		return value.OfFloat(0)
	case iceberg.StringType, iceberg.BinaryType:
		return value.OfBytes(nil)
	case iceberg.UUIDType:
		return value.OfBytes(make([]byte, 16))
	case iceberg.DecimalType:
		return value.OfDecimal(big.NewInt(0), 0)
	}
	return value.OfInt(0)
}

// randomPredicate builds a random predicate over the generated columns.
func randomPredicate(r *rand.Rand, s *iceberg.Schema, df *decodedFile, depth int) predicate.Expr {
	if depth > 0 && r.IntN(3) > 0 {
		n := 2 + r.IntN(2)
		kids := make([]predicate.Expr, n)
		for i := range kids {
			kids[i] = randomPredicate(r, s, df, depth-1)
		}
		switch r.IntN(5) {
		case 0, 1:
			return predicate.And{Kids: kids}
		case 2, 3:
			return predicate.Or{Kids: kids}
		default:
			return predicate.Not{Kid: kids[0]}
		}
	}
	fields := s.Fields()
	f := fields[r.IntN(len(fields))]
	cells := df.Cols[f.ID]
	l := &predicate.Leaf{FieldID: f.ID, Negated: r.IntN(4) == 0}
	_, isString := f.Type.(iceberg.StringType)
	switch k := r.IntN(12); {
	case k < 5:
		l.Op = []predicate.Op{predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq}[k]
		l.Raw = []iceberg.Literal{randomLiteral(r, f, cells)}
	case k < 7:
		l.Op = predicate.OpIn
		for n := 1 + r.IntN(4); n > 0; n-- {
			l.Raw = append(l.Raw, randomLiteral(r, f, cells))
		}
	case k < 8:
		l.Op = predicate.OpIsNull
	case k < 9 && value.IsFloat(f.Type):
		l.Op = predicate.OpIsNaN
	case k < 11 && isString:
		l.Op = predicate.OpStartsWith
		lit := randomLiteral(r, f, cells).(iceberg.StringLiteral)
		runes := []rune(string(lit))
		if len(runes) > 0 {
			runes = runes[:r.IntN(len(runes)+1)]
		}
		l.Raw = []iceberg.Literal{iceberg.StringLiteral(string(runes))}
	default: // BETWEEN
		a, b := randomLiteral(r, f, cells), randomLiteral(r, f, cells)
		return predicate.And{Kids: []predicate.Expr{
			&predicate.Leaf{FieldID: f.ID, Op: predicate.OpGtEq, Raw: []iceberg.Literal{a}},
			&predicate.Leaf{FieldID: f.ID, Op: predicate.OpLtEq, Raw: []iceberg.Literal{b}},
		}}
	}
	return l
}

// randomBoundPredicate is randomPredicate bound to s.
func randomBoundPredicate(t testing.TB, r *rand.Rand, s *iceberg.Schema, df *decodedFile) predicate.Expr {
	t.Helper()
	raw := randomPredicate(r, s, df, 2)
	e, err := predicate.Bind(raw, s, predicate.DefaultLimits)
	if err != nil {
		t.Fatalf("bind %s: %v", raw, err)
	}
	return e
}

type diffFile struct {
	name string
	data []byte
	df   *decodedFile
	file DataFile
}

func generatedFiles(t testing.TB, rows int64) ([]diffFile, *iceberg.Schema) {
	cols := genColumns()
	_, schema := genSchemas(cols)
	var out []diffFile
	for i, v := range variants {
		data := writeVariant(t, cols, v, rows, uint64(100+i))
		df := decodeAll(t, data, schema)
		path := fmt.Sprintf("s3://t/data/%d.parquet", i)
		out = append(out, diffFile{name: v.name, data: data, df: df, file: DataFile{Path: path, Size: int64(len(data)), RecordCount: df.Rows,
			Stats: manifestStatsOf(t, df, schema)}})
	}
	return out, schema
}

// TestPlansNeverDropAMatchingRowOnGeneratedFiles is the differential suite:
// random predicates over every type, layout and index variant, each plan
// checked against a full decode of the file.
func TestPlansNeverDropAMatchingRowOnGeneratedFiles(t *testing.T) {
	files, schema := generatedFiles(t, 3600)
	mem := memFiles{}
	for _, f := range files {
		mem[f.file.Path] = f.data
	}
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	n := 1500
	if testing.Short() {
		n = 200
	}
	r := rand.New(rand.NewPCG(42, 1))
	var matching, planned, total int64
	tierPrunes := map[string]int64{}
	for i := 0; i < n; i++ {
		f := files[i%len(files)]
		e := randomBoundPredicate(t, r, schema, f.df)
		var proj []int
		if r.IntN(2) == 0 {
			proj = []int{1 + r.IntN(19)}
		}
		req := Request{Table: Table{Schema: schema}, Files: []DataFile{f.file}, Predicate: e, Projection: proj, Options: DefaultOptions()}
		if i%3 == 0 {
			req.Files[0].HasDeletes = true
			req.Deletes = fixedDeletes{randomDeletes(r, f.df)}
		}
		if i%2 == 0 {
			req.SideIndex = sideIndexFor(r, f.df, e)
		}
		resp, plans, err := p.Plan(context.Background(), req)
		if err != nil {
			t.Fatalf("plan %s: %v", e, err)
		}
		m, pl := checkPlan(t, f.name, e, f.df, plans[0], resp)
		checkDeletedPositions(t, f.name, plans[0], resp)
		checkPagesCoverRows(t, f.name, e, plans[0], resp)
		matching += m
		planned += pl
		total += f.df.Rows
		for _, ts := range resp.Stats.Tiers {
			tierPrunes[ts.Tier] += ts.RowGroupsPruned + ts.FilesPruned + ts.PagesPruned
		}
	}
	fp := 0.0
	if planned > 0 {
		fp = float64(planned-matching) / float64(planned)
	}
	t.Logf("%d predicates: %d of %d rows matched, %d planned; false-positive rate %.3f; prunes by tier %v", n, matching, total, planned, fp, tierPrunes)
	for _, tier := range Tiers {
		if tier == TierLimit {
			continue // no request here has a limit: TestALimitPlanHoldsLimitMatchingRowsOrEveryMatch
		}
		if tierPrunes[tier] == 0 && !testing.Short() { // 200 predicates (-short) may miss a rare tier
			t.Errorf("tier %s never pruned anything: the suite does not exercise it", tier)
		}
	}
}

// checkPagesCoverRows asserts that in every narrowed row group each
// projected column's planned pages cover the planned rows, that chunks
// starting with a dictionary page have their dictionary region planned,
// and that the file ranges cover every planned page.
func checkPagesCoverRows(t testing.TB, name string, e predicate.Expr, fp *FilePlan, resp *pushdown_pb.ParquetPushdownResponse) {
	t.Helper()
	type key struct{ rg, col int }
	pages := map[key][]*pushdown_pb.PageRef{}
	for _, pg := range resp.GetPages() {
		if pg.File != fp.File.Path {
			continue
		}
		c := -1
		for i := 0; i < fp.Footer.Meta.Schema.NumColumns(); i++ {
			if fp.Footer.Meta.Schema.Column(i).Path() == pg.GetColumn().GetPath() {
				c = i
			}
		}
		if c < 0 {
			t.Fatalf("%s: page ref names unknown column %q", name, pg.GetColumn().GetPath())
		}
		pages[key{int(pg.RowGroup), c}] = append(pages[key{int(pg.RowGroup), c}], pg)
		covered := false
		for _, fr := range resp.GetFileRanges() {
			if fr.File == pg.File && fr.Offset <= pg.Offset && pg.Offset+pg.Length <= fr.Offset+fr.Length {
				covered = true
			}
		}
		if !covered {
			t.Fatalf("%s: %s: page %v is not inside any file range", name, e, pg)
		}
	}
	for k, refs := range pages {
		rgp := fp.rowGroups[k.rg]
		if rgp.Rows == nil {
			t.Fatalf("%s: pages listed for row group %d which is not narrowed", name, k.rg)
		}
		cc, _ := fp.Footer.Meta.RowGroup(k.rg).ColumnChunk(k.col)
		hasDict := false
		for _, r := range refs {
			if r.Dictionary {
				hasDict = true
			}
		}
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < cc.DataPageOffset() && !hasDict {
			t.Fatalf("%s: %s: row group %d column %d has a dictionary page but no dictionary region was planned", name, e, k.rg, k.col)
		}
		for _, rr := range rgp.Rows {
			for row := rr.Start; row < rr.End; row++ {
				ok := false
				for _, r := range refs {
					if !r.Dictionary && r.FirstRowIndex <= row && row < r.FirstRowIndex+r.RowCount {
						ok = true
						break
					}
				}
				if !ok {
					t.Fatalf("%s: %s: row %d of row group %d is planned but no page of column %d covers it", name, e, row, k.rg, k.col)
				}
			}
		}
		checkContinuedPagesPlanned(t, name, e, fp, k.rg, k.col, refs)
	}
}

// checkContinuedPagesPlanned: a page continuing a planned row (a list
// column's, from a page_index side index) is planned too, and the refs
// say which pages start and end inside a row.
func checkContinuedPagesPlanned(t testing.TB, name string, e predicate.Expr, fp *FilePlan, rg, col int, refs []*pushdown_pb.PageRef) {
	t.Helper()
	idx, err := fp.Footer.PageIndex(context.Background(), rg)
	if err != nil || idx == nil || col >= len(idx.Columns) {
		return
	}
	all := idx.Columns[col].Pages
	byPage := map[int32]*pushdown_pb.PageRef{}
	for _, r := range refs {
		if !r.Dictionary {
			byPage[r.Page] = r
		}
	}
	for i, pg := range all {
		r := byPage[int32(i)]
		if pg.StartsInsideRow && fp.rowGroups[rg].Rows.Overlaps(pg.FirstRow-1, pg.FirstRow) && r == nil {
			t.Fatalf("%s: %s: row %d of row group %d is planned, page %d of column %d continuing it is not", name, e, pg.FirstRow-1, rg, i, col)
		}
		if r != nil && (r.StartsInsideRow != pg.StartsInsideRow || r.EndsInsideRow != (i+1 < len(all) && all[i+1].StartsInsideRow)) {
			t.Fatalf("%s: %s: row group %d page %d of column %d: ref starts/ends inside a row %v/%v, the index says otherwise", name, e, rg, i, col, r.StartsInsideRow, r.EndsInsideRow)
		}
	}
}
