package sqlstmt

// Values of one row of a column, as the grouping and HAVING see them:
// integers (also dates, times and timestamps in their Arrow unit), floats,
// strings (and binary), booleans; NULL is a separate flag.

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

type kind uint8

const (
	kNull kind = iota
	kInt
	kFloat
	kStr
	kBool
)

type val struct {
	k kind
	i int64 // kInt, kBool (0/1)
	f float64
	s string
}

func intVal(i int64) val     { return val{k: kInt, i: i} }
func floatVal(f float64) val { return val{k: kFloat, f: f} }

// getter reads row i of an array; ok false is NULL.
type getter func(i int) (v val, ok bool)

// valueKind is the kind a column of Arrow type t reads as (kNull: not
// supported).
func valueKind(t arrow.DataType) kind {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION:
		return kInt
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return kFloat
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY, arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return kStr
	case arrow.BOOL:
		return kBool
	case arrow.DICTIONARY:
		return valueKind(t.(*arrow.DictionaryType).ValueType)
	}
	return kNull
}

// plainType is t without dictionary encoding.
func plainType(t arrow.DataType) arrow.DataType {
	if d, ok := t.(*arrow.DictionaryType); ok {
		return d.ValueType
	}
	return t
}

// getterOf reads the values of a.
func getterOf(a arrow.Array) (getter, error) {
	nulls := a.NullN() > 0
	wrap := func(g getter) getter {
		if !nulls {
			return g
		}
		return func(i int) (val, bool) {
			if a.IsNull(i) {
				return val{}, false
			}
			return g(i)
		}
	}
	switch x := a.(type) {
	case *array.Int64:
		v := x.Int64Values()
		return wrap(func(i int) (val, bool) { return intVal(v[i]), true }), nil
	case *array.Int32:
		v := x.Int32Values()
		return wrap(func(i int) (val, bool) { return intVal(int64(v[i])), true }), nil
	case *array.Int16:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Int8:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Uint8:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Uint16:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Uint32:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Date32:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Date64:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Timestamp:
		v := x.TimestampValues()
		return wrap(func(i int) (val, bool) { return intVal(int64(v[i])), true }), nil
	case *array.Time32:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Time64:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Duration:
		return wrap(func(i int) (val, bool) { return intVal(int64(x.Value(i))), true }), nil
	case *array.Float64:
		v := x.Float64Values()
		return wrap(func(i int) (val, bool) { return floatVal(v[i]), true }), nil
	case *array.Float32:
		v := x.Float32Values()
		return wrap(func(i int) (val, bool) { return floatVal(float64(v[i])), true }), nil
	case *array.Float16:
		return wrap(func(i int) (val, bool) { return floatVal(float64(x.Value(i).Float32())), true }), nil
	case *array.String:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: x.Value(i)}, true }), nil
	case *array.LargeString:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: x.Value(i)}, true }), nil
	case *array.StringView:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: x.Value(i)}, true }), nil
	case *array.Binary:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: string(x.Value(i))}, true }), nil
	case *array.LargeBinary:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: string(x.Value(i))}, true }), nil
	case *array.FixedSizeBinary:
		return wrap(func(i int) (val, bool) { return val{k: kStr, s: string(x.Value(i))}, true }), nil
	case *array.Boolean:
		return wrap(func(i int) (val, bool) {
			if x.Value(i) {
				return val{k: kBool, i: 1}, true
			}
			return val{k: kBool}, true
		}), nil
	case *array.Dictionary:
		values, err := getterOf(x.Dictionary())
		if err != nil {
			return nil, err
		}
		// each dictionary value once
		n := x.Dictionary().Len()
		cache := make([]val, n)
		present := make([]bool, n)
		seen := make([]bool, n)
		return wrap(func(i int) (val, bool) {
			j := x.GetValueIndex(i)
			if !seen[j] {
				cache[j], present[j] = values(j)
				seen[j] = true
			}
			return cache[j], present[j]
		}), nil
	}
	return nil, fmt.Errorf("columns of type %s", a.DataType())
}

// compareVals orders two non-NULL values of one column: numbers by value
// (NaN above every number, equal to itself: SQL's order), strings by
// bytes, false before true.
func compareVals(a, b val) int {
	switch {
	case a.k == kInt && b.k == kInt, a.k == kBool && b.k == kBool:
		return cmp.Compare(a.i, b.i)
	case a.k == kStr && b.k == kStr:
		return cmp.Compare(a.s, b.s)
	}
	return compareFloats(a.float(), b.float())
}

func (v val) float() float64 {
	if v.k == kFloat {
		return v.f
	}
	return float64(v.i)
}

func compareFloats(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

// appendKey appends v's grouping key: equal keys for equal values (NaNs
// are one group, -0 and +0 one).
func appendKey(b []byte, v val, ok bool) []byte {
	if !ok {
		return append(b, 0)
	}
	switch v.k {
	case kStr:
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(v.s)))
		return append(b, v.s...)
	case kFloat:
		f := v.f
		if math.IsNaN(f) {
			f = math.NaN()
		} else if f == 0 {
			f = 0
		}
		return binary.LittleEndian.AppendUint64(append(b, 2), math.Float64bits(f))
	}
	return binary.LittleEndian.AppendUint64(append(b, 3), uint64(v.i))
}

// appendVal appends v (ok false: NULL) to a builder of the column's type.
func appendVal(b array.Builder, v val, ok bool) error {
	if !ok {
		b.AppendNull()
		return nil
	}
	switch x := b.(type) {
	case *array.Int64Builder:
		x.Append(v.i)
	case *array.Int32Builder:
		x.Append(int32(v.i))
	case *array.Int16Builder:
		x.Append(int16(v.i))
	case *array.Int8Builder:
		x.Append(int8(v.i))
	case *array.Uint8Builder:
		x.Append(uint8(v.i))
	case *array.Uint16Builder:
		x.Append(uint16(v.i))
	case *array.Uint32Builder:
		x.Append(uint32(v.i))
	case *array.Date32Builder:
		x.Append(arrow.Date32(v.i))
	case *array.Date64Builder:
		x.Append(arrow.Date64(v.i))
	case *array.TimestampBuilder:
		x.Append(arrow.Timestamp(v.i))
	case *array.Time32Builder:
		x.Append(arrow.Time32(v.i))
	case *array.Time64Builder:
		x.Append(arrow.Time64(v.i))
	case *array.DurationBuilder:
		x.Append(arrow.Duration(v.i))
	case *array.Float64Builder:
		x.Append(v.float())
	case *array.Float32Builder:
		x.Append(float32(v.float()))
	case *array.StringBuilder:
		x.Append(v.s)
	case *array.LargeStringBuilder:
		x.Append(v.s)
	case *array.BinaryBuilder:
		x.Append([]byte(v.s))
	case *array.FixedSizeBinaryBuilder:
		x.Append([]byte(v.s))
	case *array.BooleanBuilder:
		x.Append(v.i != 0)
	default:
		return fmt.Errorf("results of type %s", b.Type())
	}
	return nil
}
