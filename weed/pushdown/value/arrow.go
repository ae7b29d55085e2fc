package value

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// FromArrow converts row r of an Arrow array to a Value of Iceberg type typ
// (the table's type: timestamps are rescaled to its unit, dictionaries and
// extension arrays read through, lists element by element).
func FromArrow(a arrow.Array, r int, typ iceberg.Type) (Value, error) {
	switch x := a.(type) {
	case *array.Int8:
		return OfInt(int64(x.Value(r))), nil
	case *array.Int16:
		return OfInt(int64(x.Value(r))), nil
	case *array.Int32:
		return OfInt(int64(x.Value(r))), nil
	case *array.Int64:
		return OfInt(x.Value(r)), nil
	case *array.Uint8:
		return OfInt(int64(x.Value(r))), nil
	case *array.Uint16:
		return OfInt(int64(x.Value(r))), nil
	case *array.Uint32:
		return OfInt(int64(x.Value(r))), nil
	case *array.Uint64:
		return OfUint(x.Value(r)), nil
	case *array.Float32:
		return OfFloat(float64(x.Value(r))), nil
	case *array.Float64:
		return OfFloat(x.Value(r)), nil
	case *array.Float16:
		return OfFloat(float64(x.Value(r).Float32())), nil
	case *array.Boolean:
		return OfBool(x.Value(r)), nil
	case *array.String:
		return OfString(x.Value(r)), nil
	case *array.LargeString:
		return OfString(x.Value(r)), nil
	case *array.Binary:
		return OfBytes(append([]byte{}, x.Value(r)...)), nil
	case *array.LargeBinary:
		return OfBytes(append([]byte{}, x.Value(r)...)), nil
	case *array.FixedSizeBinary:
		return OfBytes(append([]byte{}, x.Value(r)...)), nil
	case *extensions.UUIDArray:
		u := x.Value(r)
		return OfBytes(append([]byte{}, u[:]...)), nil
	case *array.Date32:
		return OfInt(int64(x.Value(r))), nil
	case *array.Date64:
		return OfInt(int64(x.Value(r)) / 86_400_000), nil
	case *array.Time32:
		unit := x.DataType().(*arrow.Time32Type).Unit
		v := int64(x.Value(r))
		if unit == arrow.Millisecond {
			v *= 1000
		} else {
			v *= 1_000_000
		}
		return OfInt(v), nil
	case *array.Time64:
		v := int64(x.Value(r))
		if x.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			v /= 1000
		}
		return OfInt(v), nil
	case *array.Timestamp:
		unit := x.DataType().(*arrow.TimestampType).Unit
		v := int64(x.Value(r))
		nanos := IsNanosecond(typ)
		switch unit {
		case arrow.Second:
			v *= 1_000_000
			if nanos {
				v *= 1000
			}
		case arrow.Millisecond:
			v *= 1000
			if nanos {
				v *= 1000
			}
		case arrow.Microsecond:
			if nanos {
				v *= 1000
			}
		case arrow.Nanosecond:
			if !nanos {
				v = floorDiv(v, 1000)
			}
		}
		return OfInt(v), nil
	case *array.Decimal128:
		dt := x.DataType().(*arrow.Decimal128Type)
		return OfDecimal(x.Value(r).BigInt(), dt.Scale), nil
	case *array.Decimal256:
		dt := x.DataType().(*arrow.Decimal256Type)
		return OfDecimal(x.Value(r).BigInt(), dt.Scale), nil
	case *array.Dictionary:
		return FromArrow(x.Dictionary(), x.GetValueIndex(r), typ)
	case array.ExtensionArray:
		return FromArrow(x.Storage(), r, typ)
	case array.ListLike:
		lt, ok := typ.(*iceberg.ListType)
		if !ok {
			return Value{}, fmt.Errorf("value: a list where the table has %s", typ)
		}
		lo, hi := x.ValueOffsets(r)
		elems := x.ListValues()
		out := make([]Value, 0, hi-lo)
		for i := lo; i < hi; i++ {
			if elems.IsNull(int(i)) {
				out = append(out, Value{})
				continue
			}
			v, err := FromArrow(elems, int(i), lt.Element)
			if err != nil {
				return Value{}, err
			}
			out = append(out, v)
		}
		return OfList(out), nil
	}
	return Value{}, fmt.Errorf("value: unsupported arrow type %s", a.DataType())
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
