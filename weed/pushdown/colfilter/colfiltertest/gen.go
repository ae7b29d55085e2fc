// Package colfiltertest generates columns and predicates for differential
// tests of colfilter against predicate.Eval (the connector's, the volume's
// and colfilter's own).
//
//	rng ─▶ Array (every kernel's Arrow type) ─▶ Leaf / Expr over them
package colfiltertest

import (
	"math"
	"math/big"
	"math/rand"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Column is a generated Arrow array with the Iceberg type it is read as
// and a pool of values (as literals) it holds or nearly holds.
type Column struct {
	Arr  arrow.Array
	Type iceberg.Type
	Lits []value.Value
}

// FloatSpecials are the floats whose comparisons IEEE defines specially.
var FloatSpecials = []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -1.5, 3}

// Array generates a column of kind (0..Kinds-1) with n values: NULLs, NaN,
// ±0, ±Inf, empty and non-UTF-8 strings, decimals, timestamps of every
// unit, dictionaries.
func Array(rng *rand.Rand, kind, n int) Column {
	mem := memory.DefaultAllocator
	null := func() bool { return rng.Intn(5) == 0 }
	small := func() int64 { return int64(rng.Intn(7) - 3) }
	var g Column
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
		g.Arr = b.NewArray()
		b.Release()
		for v := int64(-4); v <= 4; v++ {
			g.Lits = append(g.Lits, lit(v))
		}
	}
	asInt := func(v int64) value.Value { return value.OfInt(v) }
	switch kind {
	case 0:
		b := array.NewInt8Builder(mem)
		g.Type = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(int8(v)) }, asInt)
	case 1:
		b := array.NewUint16Builder(mem)
		g.Type = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(uint16(v + 3)) }, asInt)
	case 2:
		b := array.NewInt32Builder(mem)
		g.Type = iceberg.PrimitiveTypes.Int32
		ints(b, func(v int64) { b.Append(int32(v)) }, asInt)
	case 3:
		b := array.NewInt64Builder(mem)
		g.Type = iceberg.PrimitiveTypes.Int64
		ints(b, func(v int64) { b.Append(v * 1e12) }, func(v int64) value.Value { return value.OfInt(v * 1e12) })
	case 4:
		b := array.NewDate32Builder(mem)
		g.Type = iceberg.PrimitiveTypes.Date
		ints(b, func(v int64) { b.Append(arrow.Date32(v)) }, asInt)
	case 5:
		unit := []arrow.TimeUnit{arrow.Second, arrow.Millisecond}[rng.Intn(2)]
		b := array.NewTime32Builder(mem, &arrow.Time32Type{Unit: unit})
		g.Type = iceberg.PrimitiveTypes.Time
		mul := map[arrow.TimeUnit]int64{arrow.Second: 1e6, arrow.Millisecond: 1e3}[unit]
		ints(b, func(v int64) { b.Append(arrow.Time32(v)) }, func(v int64) value.Value { return value.OfInt(v*mul + small()) })
	case 6:
		unit := []arrow.TimeUnit{arrow.Microsecond, arrow.Nanosecond}[rng.Intn(2)]
		b := array.NewTime64Builder(mem, &arrow.Time64Type{Unit: unit})
		g.Type = iceberg.PrimitiveTypes.Time
		ints(b, func(v int64) { b.Append(arrow.Time64(v * 1500)) }, func(v int64) value.Value { return value.OfInt(v * 1500) })
	case 7:
		unit := arrow.TimeUnit(rng.Intn(4))
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: unit})
		g.Type = []iceberg.Type{iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampNs}[rng.Intn(2)]
		// values around zero (negative nanoseconds floor to microseconds)
		ints(b, func(v int64) { b.Append(arrow.Timestamp(v*999 + small())) }, func(v int64) value.Value { return value.OfInt(v*999 + small()) })
	case 8:
		b := array.NewBooleanBuilder(mem)
		g.Type = iceberg.PrimitiveTypes.Bool
		ints(b, func(v int64) { b.Append(v > 0) }, func(v int64) value.Value { return value.OfBool(v > 0) })
	case 9, 10:
		g.Type = iceberg.PrimitiveTypes.Float64
		pick := func() float64 { return FloatSpecials[rng.Intn(len(FloatSpecials))] }
		if kind == 9 {
			b := array.NewFloat32Builder(mem)
			g.Type = iceberg.PrimitiveTypes.Float32
			for i := 0; i < n; i++ {
				if null() {
					b.AppendNull()
				} else {
					b.Append(float32(pick()))
				}
			}
			g.Arr = b.NewArray()
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
			g.Arr = b.NewArray()
			b.Release()
		}
		for _, f := range FloatSpecials {
			g.Lits = append(g.Lits, value.OfFloat(f))
		}
	case 11, 12, 13, 14:
		words := []string{"", "a", "ab", "abc", "b", "ba", "\xff", "a\x00", "€", "a€b", "\xe2\x82", "a%_\\"}
		var b interface {
			AppendNull()
			Release()
			NewArray() arrow.Array
		}
		var add func(string)
		switch kind {
		case 11:
			sb := array.NewStringBuilder(mem)
			b, add, g.Type = sb, sb.Append, iceberg.PrimitiveTypes.String
		case 12:
			sb := array.NewLargeStringBuilder(mem)
			b, add, g.Type = sb, sb.Append, iceberg.PrimitiveTypes.String
		case 13:
			bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			b, add, g.Type = bb, func(s string) { bb.Append([]byte(s)) }, iceberg.PrimitiveTypes.Binary
		case 14:
			fb := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 2})
			words = []string{"aa", "ab", "ba", "\x00\xff", "\xff\x00"}
			b, add, g.Type = fb, func(s string) { fb.Append([]byte(s)) }, iceberg.FixedTypeOf(2)
		}
		for i := 0; i < n; i++ {
			if null() {
				b.AppendNull()
			} else {
				add(words[rng.Intn(len(words))])
			}
		}
		g.Arr = b.NewArray()
		b.Release()
		for _, w := range append(words, "zz", "a\x00\x00") {
			g.Lits = append(g.Lits, value.OfString(w))
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
		g.Arr = b.NewArray()
		b.Release()
		g.Type = iceberg.DecimalTypeOf(20, int(scale))
		for v := int64(-4); v <= 4; v++ {
			// literals at other scales compare by value
			g.Lits = append(g.Lits, value.OfDecimal(big.NewInt(v*50), scale), value.OfDecimal(big.NewInt(v*5), scale-1+int32(rng.Intn(3))))
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
		g.Arr = db.NewArray()
		db.Release()
		g.Type = iceberg.PrimitiveTypes.String
		for _, w := range append(words, "e", "zz") {
			g.Lits = append(g.Lits, value.OfString(w))
		}
	}
	return g
}

// Kinds is the number of kinds Array generates.
const Kinds = 17

// Leaf is a random leaf on field id over g's values (every operator,
// negated or not).
func Leaf(rng *rand.Rand, id int, g Column) *predicate.Leaf {
	ops := []predicate.Op{predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq,
		predicate.OpIn, predicate.OpIsNull, predicate.OpIsNaN, predicate.OpStartsWith, predicate.OpLike, predicate.OpILike}
	l := &predicate.Leaf{FieldID: id, Op: ops[rng.Intn(len(ops))], Negated: rng.Intn(3) == 0, Type: g.Type}
	lit := func() value.Value { return g.Lits[rng.Intn(len(g.Lits))] }
	switch l.Op {
	case predicate.OpIsNull, predicate.OpIsNaN:
	case predicate.OpLike, predicate.OpILike:
		l.Lits = []value.Value{value.OfBytes(likePattern(rng))}
	case predicate.OpIn:
		for k := rng.Intn(7) + 1; k > 0; k-- {
			l.Lits = append(l.Lits, lit())
		}
	default:
		l.Lits = []value.Value{lit()}
	}
	return l
}

// likePattern is a LIKE pattern of literal runs, wildcards, escapes (a
// trailing one too), multi-byte runes and invalid UTF-8.
func likePattern(rng *rand.Rand) []byte {
	pieces := []string{"%", "%", "_", "a", "b", "ab", "ba", "A", "€", "\\%", "\\_", "\\", "\xff", "\x82", "\x00"}
	var p []byte
	for k := rng.Intn(5); k > 0; k-- {
		p = append(p, pieces[rng.Intn(len(pieces))]...)
	}
	return p
}

// Expr is a random predicate over cols (field i+1 is cols[i]): And, Or,
// Not, leaves, constants and residuals, up to depth levels.
func Expr(rng *rand.Rand, cols []Column, depth int) predicate.Expr {
	if depth <= 0 || rng.Intn(3) == 0 {
		switch rng.Intn(12) {
		case 0:
			return predicate.Const{Value: rng.Intn(2) == 0}
		case 1:
			return predicate.Residual{Reason: "test"}
		}
		i := rng.Intn(len(cols))
		return Leaf(rng, i+1, cols[i])
	}
	kids := make([]predicate.Expr, rng.Intn(3)+1)
	for i := range kids {
		kids[i] = Expr(rng, cols, depth-1)
	}
	switch rng.Intn(5) {
	case 0:
		return predicate.Not{Kid: kids[0]}
	case 1, 2:
		return predicate.And{Kids: kids}
	}
	return predicate.Or{Kids: kids}
}

// RowValue is g's value at position p as a row-wise reading gives it (the
// oracle's side of a differential test): NULL, or value.FromArrow's.
func RowValue(g Column, p int) (v value.Value, null bool, err error) {
	if g.Arr.IsNull(p) {
		return value.Value{}, true, nil
	}
	v, err = value.FromArrow(g.Arr, p, g.Type)
	return v, false, err
}
