package value

import (
	"fmt"
	"math"
	"math/big"

	"github.com/apache/iceberg-go"
)

// KindOf is the comparison domain of an Iceberg primitive type; ok is false
// for types a predicate cannot filter on (nested, variant, geo, unknown).
func KindOf(t iceberg.Type) (Kind, bool) {
	switch t.(type) {
	case iceberg.BooleanType:
		return Bool, true
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType,
		iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return Int, true
	case iceberg.Float32Type, iceberg.Float64Type:
		return Float, true
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return Bytes, true
	case iceberg.DecimalType:
		return Decimal, true
	}
	return Invalid, false
}

// IsFloat reports whether t is float or double (the types that hold NaN).
func IsFloat(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.Float32Type, iceberg.Float64Type:
		return true
	}
	return false
}

// IsNanosecond reports whether t counts nanoseconds (timestamp_ns types).
func IsNanosecond(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return true
	}
	return false
}

// FromLiteral converts an Iceberg literal to a Value of field type t. The
// literal must already have t's type (after iceberg-go's binding or an exact
// conversion); anything else is an error naming both types.
func FromLiteral(t iceberg.Type, lit iceberg.Literal) (Value, error) {
	if lit == nil {
		return Value{}, fmt.Errorf("null literal for %s", t)
	}
	switch l := lit.(type) {
	case iceberg.BoolLiteral:
		if _, ok := t.(iceberg.BooleanType); ok {
			return OfBool(bool(l)), nil
		}
	case iceberg.Int32Literal:
		switch t.(type) {
		case iceberg.Int32Type, iceberg.Int64Type:
			return OfInt(int64(l)), nil
		}
	case iceberg.Int64Literal:
		switch t.(type) {
		case iceberg.Int64Type:
			return OfInt(int64(l)), nil
		case iceberg.Int32Type:
			if int64(l) >= math.MinInt32 && int64(l) <= math.MaxInt32 {
				return OfInt(int64(l)), nil
			}
			return Value{}, fmt.Errorf("literal %d is out of range for %s", int64(l), t)
		}
	case iceberg.Float32Literal:
		if IsFloat(t) {
			return OfFloat(float64(l)), nil
		}
	case iceberg.Float64Literal:
		switch t.(type) {
		case iceberg.Float64Type:
			return OfFloat(float64(l)), nil
		case iceberg.Float32Type:
			// A double literal on a float column compares after rounding to
			// float32, as the column stores it; only exact values are allowed.
			f := float64(l)
			if math.IsNaN(f) || float64(float32(f)) == f {
				return OfFloat(float64(float32(f))), nil
			}
			return Value{}, fmt.Errorf("literal %v is not exactly representable as %s", f, t)
		}
	case iceberg.DateLiteral:
		if _, ok := t.(iceberg.DateType); ok {
			return OfInt(int64(l)), nil
		}
	case iceberg.TimeLiteral:
		if _, ok := t.(iceberg.TimeType); ok {
			return OfInt(int64(l)), nil
		}
	case iceberg.TimestampLiteral:
		switch t.(type) {
		case iceberg.TimestampType, iceberg.TimestampTzType:
			return OfInt(int64(l)), nil
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			if int64(l) > math.MaxInt64/1000 || int64(l) < math.MinInt64/1000 {
				return Value{}, fmt.Errorf("timestamp literal %d µs overflows nanoseconds", int64(l))
			}
			return OfInt(int64(l) * 1000), nil
		}
	case iceberg.TimestampNsLiteral:
		if IsNanosecond(t) {
			return OfInt(int64(l)), nil
		}
	case iceberg.StringLiteral:
		if _, ok := t.(iceberg.StringType); ok {
			return OfString(string(l)), nil
		}
	case iceberg.BinaryLiteral:
		switch tt := t.(type) {
		case iceberg.BinaryType:
			return OfBytes([]byte(l)), nil
		case iceberg.FixedType:
			if len(l) != tt.Len() {
				return Value{}, fmt.Errorf("binary literal of %d bytes for %s", len(l), t)
			}
			return OfBytes([]byte(l)), nil
		}
	case iceberg.FixedLiteral:
		switch tt := t.(type) {
		case iceberg.FixedType:
			if len(l) != tt.Len() {
				return Value{}, fmt.Errorf("fixed literal of %d bytes for %s", len(l), t)
			}
			return OfBytes([]byte(l)), nil
		case iceberg.BinaryType:
			return OfBytes([]byte(l)), nil
		case iceberg.UUIDType:
			if len(l) == 16 {
				return OfBytes([]byte(l)), nil
			}
		}
	case iceberg.UUIDLiteral:
		if _, ok := t.(iceberg.UUIDType); ok {
			b := [16]byte(l)
			return OfBytes(b[:]), nil
		}
	case iceberg.DecimalLiteral:
		if dt, ok := t.(iceberg.DecimalType); ok {
			v := OfDecimal(l.Val.BigInt(), int32(l.Scale))
			if int(l.Scale) > dt.Scale() {
				return Value{}, fmt.Errorf("decimal literal %s has scale %d, more than %s", iceberg.Decimal(l).String(), l.Scale, t)
			}
			return v, nil
		}
	}
	return Value{}, fmt.Errorf("literal %s (%s) does not match column type %s", lit, lit.Type(), t)
}

// FromIcebergBound decodes a manifest lower/upper bound (Iceberg's
// single-value binary serialization) of field type t.
func FromIcebergBound(t iceberg.Type, b []byte) (Value, error) {
	lit, err := iceberg.LiteralFromBytes(t, b)
	if err != nil {
		return Value{}, err
	}
	if lit == nil {
		return Value{}, fmt.Errorf("empty bound")
	}
	return FromLiteral(t, lit)
}

// FromGo converts a partition value as iceberg-go returns it (Go native
// types) to a Value of type t.
func FromGo(t iceberg.Type, v any) (Value, error) {
	switch x := v.(type) {
	case nil:
		return Value{}, fmt.Errorf("null")
	case iceberg.Literal:
		return FromLiteral(t, x)
	case bool:
		return FromLiteral(t, iceberg.BoolLiteral(x))
	case int32:
		if k, _ := KindOf(t); k == Int {
			return OfInt(int64(x)), nil
		}
		return FromLiteral(t, iceberg.Int32Literal(x))
	case int:
		return FromLiteral(t, iceberg.Int64Literal(int64(x)))
	case int64:
		switch t.(type) {
		case iceberg.Int32Type, iceberg.Int64Type:
			return FromLiteral(t, iceberg.Int64Literal(x))
		}
		k, _ := KindOf(t)
		if k == Int {
			return OfInt(x), nil
		}
	case float32:
		return FromLiteral(t, iceberg.Float32Literal(x))
	case float64:
		return FromLiteral(t, iceberg.Float64Literal(x))
	case string:
		return FromLiteral(t, iceberg.StringLiteral(x))
	case []byte:
		return FromLiteral(t, iceberg.FixedLiteral(x))
	case iceberg.Date:
		return FromLiteral(t, iceberg.DateLiteral(x))
	case iceberg.Time:
		return FromLiteral(t, iceberg.TimeLiteral(x))
	case iceberg.Timestamp:
		return FromLiteral(t, iceberg.TimestampLiteral(x))
	case iceberg.TimestampNano:
		return FromLiteral(t, iceberg.TimestampNsLiteral(x))
	case iceberg.Decimal:
		return FromLiteral(t, iceberg.DecimalLiteral(x))
	case [16]byte:
		return FromLiteral(t, iceberg.FixedLiteral(x[:]))
	}
	return Value{}, fmt.Errorf("value %v (%T) for %s not understood", v, v, t)
}

// DecimalFromTwosComplement decodes a big-endian two's complement integer.
func DecimalFromTwosComplement(b []byte, scale int32) Value {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return OfDecimal(v, scale)
}
