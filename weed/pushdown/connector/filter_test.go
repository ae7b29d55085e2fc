package connector

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// genColumn is a generated Arrow array with the Iceberg type it is read as
// and a pool of values (as literals) it holds or nearly holds.
type genColumn struct {
	arr  arrow.Array
	typ  iceberg.Type
	lits []value.Value
}

var floatSpecials = []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -1.5, 3}

func genArray(rng *rand.Rand, kind, n int) genColumn {
	mem := memory.DefaultAllocator
	null := func() bool { return rng.Intn(5) == 0 }
	small := func() int64 { return int64(rng.Intn(7) - 3) }
	var g genColumn
	ints := func(b interface {
		AppendNull()
		Release()
		NewArray() arrow.Array
	}, add func(v int64), lit func(v int64) value.Value) {
		for i := 0; i < n; i++ {
			if null() {
				b.AppendNull()
			} else {
				add(small())
			}
		}
		g.arr = b.NewArray()
		b.Release()
		for v := int64(-4); v <= 4; v++ {
			g.lits = append(g.lits, lit(v))
		}
	}
	asInt := func(v int64) value.Value { return value.OfInt(v) }
	switch kind {
	case 0:
		b := array.NewInt8Builder(mem)
		g.typ = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(int8(v)) }, asInt)
	case 1:
		b := array.NewUint16Builder(mem)
		g.typ = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(uint16(v + 3)) }, asInt)
	case 2:
		b := array.NewInt32Builder(mem)
		g.typ = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(int32(v)) }, asInt)
	case 3:
		b := array.NewInt64Builder(mem)
		g.typ = iceberg.PrimitiveTypes.Int64
		ints(b, func(v int64) { b.Append(v * 1e12) }, func(v int64) value.Value { return value.OfInt(v * 1e12) })
	case 4:
		b := array.NewDate32Builder(mem)
		g.typ = iceberg.PrimitiveTypes.Date
		ints(b, func(v int64) { b.Append(arrow.Date32(v)) }, asInt)
	case 5:
		unit := []arrow.TimeUnit{arrow.Second, arrow.Millisecond}[rng.Intn(2)]
		b := array.NewTime32Builder(mem, &arrow.Time32Type{Unit: unit})
		g.typ = iceberg.PrimitiveTypes.Time
		mul := map[arrow.TimeUnit]int64{arrow.Second: 1e6, arrow.Millisecond: 1e3}[unit]
		ints(b, func(v int64) { b.Append(arrow.Time32(v)) }, func(v int64) value.Value { return value.OfInt(v*mul + small()) })
	case 6:
		unit := []arrow.TimeUnit{arrow.Microsecond, arrow.Nanosecond}[rng.Intn(2)]
		b := array.NewTime64Builder(mem, &arrow.Time64Type{Unit: unit})
		g.typ = iceberg.PrimitiveTypes.Time
		ints(b, func(v int64) { b.Append(arrow.Time64(v * 1500)) }, func(v int64) value.Value { return value.OfInt(v * 1500) })
	case 7:
		unit := arrow.TimeUnit(rng.Intn(4))
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: unit})
		g.typ = []iceberg.Type{iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampNs}[rng.Intn(2)]
		// values around zero (negative nanoseconds floor to microseconds)
		ints(b, func(v int64) { b.Append(arrow.Timestamp(v*999 + small())) }, func(v int64) value.Value { return value.OfInt(v*999 + small()) })
	case 8:
		b := array.NewBooleanBuilder(mem)
		g.typ = iceberg.PrimitiveTypes.Bool
		ints(b, func(v int64) { b.Append(v > 0) }, func(v int64) value.Value { return value.OfBool(v > 0) })
	case 9, 10:
		g.typ = iceberg.PrimitiveTypes.Float64
		pick := func() float64 { return floatSpecials[rng.Intn(len(floatSpecials))] }
		if kind == 9 {
			b := array.NewFloat32Builder(mem)
			g.typ = iceberg.PrimitiveTypes.Float32
			for i := 0; i < n; i++ {
				if null() {
					b.AppendNull()
				} else {
					b.Append(float32(pick()))
				}
			}
			g.arr = b.NewArray()
			b.Release()
		} else {
			b := array.NewFloat64Builder(mem)
			for i := 0; i < n; i++ {
				if null() {
					b.AppendNull()
				} else {
					b.Append(pick())
				}
			}
			g.arr = b.NewArray()
			b.Release()
		}
		for _, f := range floatSpecials {
			g.lits = append(g.lits, value.OfFloat(f))
		}
	case 11, 12, 13, 14:
		words := []string{"", "a", "ab", "abc", "b", "ba", "\xff", "a\x00"}
		var b interface {
			AppendNull()
			Release()
			NewArray() arrow.Array
		}
		var add func(string)
		switch kind {
		case 11:
			sb := array.NewStringBuilder(mem)
			b, add, g.typ = sb, sb.Append, iceberg.PrimitiveTypes.String
		case 12:
			sb := array.NewLargeStringBuilder(mem)
			b, add, g.typ = sb, sb.Append, iceberg.PrimitiveTypes.String
		case 13:
			bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			b, add, g.typ = bb, func(s string) { bb.Append([]byte(s)) }, iceberg.PrimitiveTypes.Binary
		case 14:
			fb := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 2})
			words = []string{"aa", "ab", "ba", "\x00\xff", "\xff\x00"}
			b, add, g.typ = fb, func(s string) { fb.Append([]byte(s)) }, iceberg.FixedTypeOf(2)
		}
		for i := 0; i < n; i++ {
			if null() {
				b.AppendNull()
			} else {
				add(words[rng.Intn(len(words))])
			}
		}
		g.arr = b.NewArray()
		b.Release()
		for _, w := range append(words, "zz", "a\x00\x00") {
			g.lits = append(g.lits, value.OfString(w))
		}
	case 15:
		scale := int32(rng.Intn(3))
		dt := &arrow.Decimal128Type{Precision: 20, Scale: scale}
		b := array.NewDecimal128Builder(mem, dt)
		for i := 0; i < n; i++ {
			if null() {
				b.AppendNull()
			} else {
				b.Append(decimal128.FromI64(small() * 50))
			}
		}
		g.arr = b.NewArray()
		b.Release()
		g.typ = iceberg.DecimalTypeOf(20, int(scale))
		for v := int64(-4); v <= 4; v++ {
			// literals at other scales compare by value
			g.lits = append(g.lits, value.OfDecimal(big.NewInt(v*50), scale), value.OfDecimal(big.NewInt(v*5), scale-1+int32(rng.Intn(3))))
		}
	case 16:
		// dictionary-encoded strings: int16 or (as pqarrow decodes them)
		// int32 indices, NULLs or none
		index := []arrow.DataType{arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32}[rng.Intn(2)]
		db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: index, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
		words := []string{"ok", "error", "warn", ""}
		noNulls := rng.Intn(3) == 0
		for i := 0; i < n; i++ {
			if !noNulls && null() {
				db.AppendNull()
			} else {
				_ = db.AppendString(words[rng.Intn(len(words))])
			}
		}
		g.arr = db.NewArray()
		db.Release()
		g.typ = iceberg.PrimitiveTypes.String
		for _, w := range append(words, "e", "zz") {
			g.lits = append(g.lits, value.OfString(w))
		}
	}
	return g
}

const genKinds = 17

func genLeaf(rng *rand.Rand, id int, g genColumn) *predicate.Leaf {
	ops := []predicate.Op{predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq,
		predicate.OpIn, predicate.OpIsNull, predicate.OpIsNaN, predicate.OpStartsWith}
	l := &predicate.Leaf{FieldID: id, Op: ops[rng.Intn(len(ops))], Negated: rng.Intn(3) == 0, Type: g.typ}
	lit := func() value.Value { return g.lits[rng.Intn(len(g.lits))] }
	switch l.Op {
	case predicate.OpIsNull, predicate.OpIsNaN:
	case predicate.OpIn:
		for k := rng.Intn(7) + 1; k > 0; k-- {
			l.Lits = append(l.Lits, lit())
		}
	default:
		l.Lits = []value.Value{lit()}
	}
	return l
}

func genExpr(rng *rand.Rand, cols []genColumn, depth int) predicate.Expr {
	if depth <= 0 || rng.Intn(3) == 0 {
		switch rng.Intn(12) {
		case 0:
			return predicate.Const{Value: rng.Intn(2) == 0}
		case 1:
			return predicate.Residual{Reason: "test"}
		}
		i := rng.Intn(len(cols))
		return genLeaf(rng, i+1, cols[i])
	}
	kids := make([]predicate.Expr, rng.Intn(3)+1)
	for i := range kids {
		kids[i] = genExpr(rng, cols, depth-1)
	}
	switch rng.Intn(5) {
	case 0:
		return predicate.Not{Kid: kids[0]}
	case 1, 2:
		return predicate.And{Kids: kids}
	}
	return predicate.Or{Kids: kids}
}

// The vectorized residual selects exactly the rows predicate.Eval (IEEE)
// finds TRUE, over random predicates (three-valued And/Or/Not, negated
// leaves, IN, IS NULL, IS NAN, STARTS_WITH, constants, residuals) on
// generated arrays of every kernel's type — NULLs, NaN, ±0, ±Inf, empty
// and non-UTF-8 strings, decimals with literals at other scales,
// timestamps of every unit read as micro- and nanoseconds, dictionaries —
// and on candidates that are a scattered subset of the array.
func TestVectorizedResidualSelectsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		cols := make([]genColumn, rng.Intn(3)+1)
		for i := range cols {
			cols[i] = genArray(rng, rng.Intn(genKinds), n)
		}
		// candidates: a random ascending subset of the positions
		var pos []int32
		for p := 0; p < n; p++ {
			if rng.Intn(4) != 0 {
				pos = append(pos, int32(p))
			}
		}
		e := genExpr(rng, cols, 3)
		b := &batch{n: len(pos), vector: func(id int) *vector {
			return &vector{typ: cols[id-1].typ, arr: cols[id-1].arr, pos: pos, errAt: func(i int, err error) error { return err }}
		}}
		got, err := (&filter{expr: e}).selectRows(b)
		if err != nil {
			t.Fatalf("seed %d: %s: %v", seed, e, err)
		}
		var want []int32
		for i, p := range pos {
			row := func(id int) (value.Value, bool) { return rowWiseValue(t, seed, cols[id-1], int(p)) }
			if predicate.Eval(e, row, predicate.IEEE) == predicate.True {
				want = append(want, int32(i))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			vals := ""
			for i := range cols {
				vals += fmt.Sprintf("\n  field %d (%s as %s): %v", i+1, cols[i].arr.DataType(), cols[i].typ, cols[i].arr)
			}
			t.Fatalf("seed %d: %s over positions %v:%s\nvectorized %v\nrow-wise   %v", seed, e, pos, vals, got, want)
		}
		for _, c := range cols {
			c.arr.Release()
		}
	}
}

// Over the decoded columns of a file with a struct, fields the file lacks
// (with and without initial-defaults, under a stored struct and under a
// missing one) and page-decoded columns holding only some rows, the
// vectorized residual selects the rows — or fails — exactly as the
// row-wise reading (rowsource_test.go) with predicate.Eval does.
func TestVectorizedResidualOnDecodedColumnsAgreesWithTheRowWiseReading(t *testing.T) {
	inner := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fieldID("3")},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldID("4")})
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID("1")},
		{Name: "s", Type: inner, Nullable: true, Metadata: fieldID("2")},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fieldID("6")},
	}, nil)
	rng := rand.New(rand.NewSource(1))
	const n = 50
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		sb := rb.Field(1).(*array.StructBuilder)
		if rng.Intn(5) == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if rng.Intn(4) == 0 {
				sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(rng.Intn(5)))
			}
			sb.FieldBuilder(1).(*array.StringBuilder).Append([]string{"x", "xy", "y"}[rng.Intn(3)])
		}
		if rng.Intn(4) == 0 {
			rb.Field(2).(*array.Float64Builder).AppendNull()
		} else {
			rb.Field(2).(*array.Float64Builder).Append(floatSpecials[rng.Intn(len(floatSpecials))])
		}
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties())
	fl := layoutOf(t, "s3://w/ns/t/data/f.parquet", data)
	def := func(v value.Value) fieldDefault { return fieldDefault{val: v} }
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 4, Name: "b", Type: iceberg.PrimitiveTypes.String},
			{ID: 5, Name: "c", Type: iceberg.PrimitiveTypes.Int32, InitialDefault: int32(2)},
		}}},
		iceberg.NestedField{ID: 6, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "g", Type: iceberg.PrimitiveTypes.Int64, InitialDefault: int64(3)},
		iceberg.NestedField{ID: 8, Name: "m", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 9, Name: "k", Type: iceberg.PrimitiveTypes.String, InitialDefault: "x"},
		}}},
	)
	fl.defaults = map[int]fieldDefault{5: def(value.OfInt(2)), 7: def(value.OfInt(3)), 9: def(value.OfString("x"))}
	parents := parentIDs(sc)
	whole, err := decodeWhole(context.Background(), fl, sparseOf(data), 0, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	gens := map[int]genColumn{}
	for _, id := range []int{1, 3, 4, 5, 6, 7, 9} {
		f, _ := sc.FindFieldByID(id)
		g := genColumn{typ: f.Type}
		switch id {
		case 4, 9:
			for _, w := range []string{"", "x", "xy", "y", "z"} {
				g.lits = append(g.lits, value.OfString(w))
			}
		case 6:
			for _, f := range floatSpecials {
				g.lits = append(g.lits, value.OfFloat(f))
			}
		default:
			for v := int64(-1); v <= 5; v++ {
				g.lits = append(g.lits, value.OfInt(v))
			}
		}
		gens[id] = g
	}
	ids := []int{1, 3, 4, 5, 6, 7, 9}
	errs := 0
	for seed := int64(0); seed < 1500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		// each column whole, or only some rows (page-decoded)
		cols := map[int]*column{}
		for top, c := range whole {
			if rng.Intn(2) == 0 {
				cols[top] = c
				continue
			}
			var rows []int64
			for r := int64(0); r < n; r++ {
				if rng.Intn(3) != 0 {
					rows = append(rows, r)
				}
			}
			taken, _, err := takeRows(context.Background(), c, rows)
			if err != nil {
				t.Fatal(err)
			}
			cols[top] = &column{arr: taken, rows: rows}
		}
		var rows []int64
		for r := int64(0); r < n; r++ {
			if rng.Intn(3) != 0 {
				rows = append(rows, r)
			}
		}
		// the expression over fields of the file, of a stored struct and missing ones
		var leafCols []genColumn
		for _, id := range ids {
			leafCols = append(leafCols, gens[id])
		}
		e := genExpr(rng, leafCols, 3)
		predicate.Walk(e, func(l *predicate.Leaf) { l.FieldID = ids[l.FieldID-1] })
		got, gerr := (&filter{expr: e}).selectRows(decodedBatch(fl, 0, cols, sc, parents, rows))
		rs := newRowSource(fl, 0, cols, sc, predicate.FieldIDs(e), fl.defaults, parents)
		var want []int32
		for i, r := range rows {
			if predicate.Eval(e, rs.row(r), predicate.IEEE) == predicate.True {
				want = append(want, int32(i))
			}
			if rs.err != nil {
				break
			}
		}
		if (gerr != nil) != (rs.err != nil) {
			t.Fatalf("seed %d: %s: vectorized error %v, row-wise error %v", seed, e, gerr, rs.err)
		}
		if gerr != nil {
			errs++
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: %s over rows %v\nvectorized %v\nrow-wise   %v", seed, e, rows, got, want)
		}
	}
	if errs == 0 {
		t.Errorf("no case read a row outside the decoded pages: the error path went untested")
	}
}

// The filter's in-place test of one leaf over a whole column (the dense
// shortcut) keeps exactly the positions predicate.Eval (IEEE) finds TRUE,
// over random leaves on generated arrays of every kernel's type (NULLs,
// NaN, ±0, negation, IN, IS NULL, dictionaries).
func TestOneLeafTestedInPlaceKeepsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	applied := 0
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		g := genArray(rng, rng.Intn(genKinds), n)
		l := genLeaf(rng, 1, g)
		got, ok := leafRowsOf(l, g.typ, g.arr)
		if ok {
			applied++
			var want []int64
			for p := 0; p < n; p++ {
				row := func(int) (value.Value, bool) { return rowWiseValue(t, seed, g, p) }
				if predicate.Eval(l, row, predicate.IEEE) == predicate.True {
					want = append(want, int64(p))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: %s on %s as %s %v:\nin place %v\nrow-wise %v", seed, l, g.arr.DataType(), g.typ, g.arr, got, want)
			}
			rowScratch.put(got)
		}
		g.arr.Release()
	}
	if applied < 1000 {
		t.Fatalf("the in-place test applied to %d of 3000 leaves", applied)
	}
}

// rowWiseValue is g's value at position p as the row-wise reading gives it.
func rowWiseValue(t *testing.T, seed int64, g genColumn, p int) (value.Value, bool) {
	t.Helper()
	if g.arr.IsNull(p) {
		return value.Value{}, true
	}
	v, err := value.FromArrow(g.arr, p, g.typ)
	if err != nil {
		t.Fatalf("seed %d: oracle: %v", seed, err)
	}
	return v, false
}

// An And of leaves tested in place (the dense shortcut) keeps exactly the
// positions predicate.Eval (IEEE) finds TRUE, over random leaves on
// generated columns of every kernel's type.
func TestAnAndOfLeavesTestedInPlaceKeepsExactlyTheRowsRowWiseEvalFindsTrue(t *testing.T) {
	applied := 0
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(40) + 1
		cols := make([]genColumn, rng.Intn(3)+1)
		leaves := make([]*predicate.Leaf, len(cols))
		typs := make([]iceberg.Type, len(cols))
		arrs := make([]arrow.Array, len(cols))
		kids := make([]predicate.Expr, len(cols))
		for i := range cols {
			cols[i] = genArray(rng, rng.Intn(genKinds), n)
			leaves[i] = genLeaf(rng, i+1, cols[i])
			typs[i], arrs[i], kids[i] = cols[i].typ, cols[i].arr, leaves[i]
		}
		e := predicate.And{Kids: kids}
		if got, ok := leavesRowsOf(leaves, typs, arrs); ok {
			applied++
			var want []int64
			for p := 0; p < n; p++ {
				row := func(id int) (value.Value, bool) { return rowWiseValue(t, seed, cols[id-1], p) }
				if predicate.Eval(e, row, predicate.IEEE) == predicate.True {
					want = append(want, int64(p))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: %s:\nin place %v\nrow-wise %v", seed, e, got, want)
			}
			rowScratch.put(got)
		}
		for _, c := range cols {
			c.arr.Release()
		}
	}
	if applied < 500 {
		t.Fatalf("the in-place test applied to %d of 3000 conjunctions", applied)
	}
}

// A point lookup's equality on a whole int64 column without NULLs keeps
// exactly the positions holding the value (every one, none when absent),
// and its negation the others.
func TestInt64EqualityOverAWholeColumnKeepsExactlyThePositionsOfTheValue(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for _, v := range []int64{5, 7, -3, 7, 0, 7, 1 << 40} {
		b.Append(v)
	}
	arr := b.NewArray()
	defer arr.Release()
	for _, tc := range []struct {
		lit     int64
		negated bool
		want    string
	}{{7, false, "[1 3 5]"}, {1 << 40, false, "[6]"}, {8, false, "[]"}, {7, true, "[0 2 4 6]"}} {
		l := &predicate.Leaf{FieldID: 1, Op: predicate.OpEq, Lits: []value.Value{{K: value.Int, I: tc.lit}}, Negated: tc.negated}
		got, ok := leafRowsOf(l, iceberg.PrimitiveTypes.Int64, arr)
		if !ok || fmt.Sprint(got) != tc.want {
			t.Fatalf("%s: kept %v (ok %v), want %s", l, got, ok, tc.want)
		}
		rowScratch.put(got)
	}
}
