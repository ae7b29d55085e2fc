package connector

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// A column added to a table after some of its files were written is absent
// from those files; Iceberg reads it there as the field's initial-default
// (v3), or NULL when it has none.
//
//	schema field ── initial-default (JSON single-value form) ──▶ iceberg.Literal of the field's type
//	                                                              ├─▶ value.Value  (residual predicate)
//	                                                              └─▶ Arrow array  (output column)

// fieldDefault is a field's initial-default as a literal of its type.
type fieldDefault struct {
	lit  iceberg.Literal
	val  value.Value
	null bool // a NULL constant (an identity partition value that is null)
}

// initialDefaults converts every primitive field's initial-default. A
// default that cannot be understood is an error naming the field: reading
// NULL instead would return wrong rows.
func initialDefaults(s *iceberg.Schema) (map[int]fieldDefault, error) {
	out := map[int]fieldDefault{}
	for id := 1; id <= s.HighestFieldID(); id++ {
		f, ok := s.FindFieldByID(id)
		if !ok || f.InitialDefault == nil {
			continue
		}
		lit, err := DefaultLiteral(f.Type, f.InitialDefault)
		if err != nil {
			return nil, fmt.Errorf("field %d (%s): initial-default %v (%T): %w", f.ID, f.Name, f.InitialDefault, f.InitialDefault, err)
		}
		v, err := value.FromLiteral(f.Type, lit)
		if err != nil {
			return nil, fmt.Errorf("field %d (%s): initial-default %v: %w", f.ID, f.Name, f.InitialDefault, err)
		}
		out[id] = fieldDefault{lit: lit, val: v}
	}
	return out, nil
}

// DefaultLiteral converts a default value, as iceberg-go holds it after
// reading table metadata (a typed Go value, or the JSON single-value form:
// bool, number, string; binary and fixed as hex), to a literal of type t.
func DefaultLiteral(t iceberg.Type, v any) (iceberg.Literal, error) {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			v = i
		} else if f, err := n.Float64(); err == nil {
			v = f
		}
	}
	var lit iceberg.Literal
	switch x := v.(type) {
	case iceberg.Literal:
		lit = x
	case bool:
		lit = iceberg.BoolLiteral(x)
	case int32:
		lit = iceberg.Int32Literal(x)
	case int:
		lit = iceberg.Int64Literal(int64(x))
	case int64:
		lit = iceberg.Int64Literal(x)
	case float32:
		lit = iceberg.Float32Literal(x)
	case float64:
		switch t.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			lit = iceberg.Float64Literal(x)
		case iceberg.DecimalType:
			// A decimal's JSON form is a string; a number is taken at face value.
			lit = iceberg.NewLiteral(fmt.Sprint(x))
		default:
			if x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
				return nil, fmt.Errorf("%v is not an integer", x)
			}
			lit = iceberg.Int64Literal(int64(x))
		}
	case string:
		switch t.(type) {
		case iceberg.StringType:
			return iceberg.StringLiteral(x), nil
		case iceberg.BinaryType, iceberg.FixedType:
			b, err := hex.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("binary default %q is not hex: %v", x, err)
			}
			lit = iceberg.BinaryLiteral(b)
			if ft, ok := t.(iceberg.FixedType); ok {
				if len(b) != ft.Len() {
					return nil, fmt.Errorf("fixed[%d] default has %d bytes", ft.Len(), len(b))
				}
				return iceberg.FixedLiteral(b), nil
			}
			return lit, nil
		}
		lit = iceberg.StringLiteral(x)
	case []byte:
		lit = iceberg.BinaryLiteral(x)
	case uuid.UUID:
		lit = iceberg.UUIDLiteral(x)
	case iceberg.Date:
		lit = iceberg.DateLiteral(x)
	case iceberg.Time:
		lit = iceberg.TimeLiteral(x)
	case iceberg.Timestamp:
		lit = iceberg.TimestampLiteral(x)
	case iceberg.TimestampNano:
		lit = iceberg.TimestampNsLiteral(x)
	case iceberg.Decimal:
		lit = iceberg.DecimalLiteral(x)
	default:
		return nil, fmt.Errorf("a default of Go type %T for %s is not understood", v, t)
	}
	// Integer JSON numbers for dates, times and timestamps are their
	// day / microsecond / nanosecond counts.
	if i, ok := lit.(iceberg.Int64Literal); ok {
		switch t.(type) {
		case iceberg.DateType:
			return iceberg.DateLiteral(iceberg.Date(i)), nil
		case iceberg.TimeType:
			return iceberg.TimeLiteral(iceberg.Time(i)), nil
		case iceberg.TimestampType, iceberg.TimestampTzType:
			return iceberg.TimestampLiteral(iceberg.Timestamp(i)), nil
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			return iceberg.TimestampNsLiteral(iceberg.TimestampNano(i)), nil
		}
	}
	out, err := lit.To(t)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// defaultArray is n copies of a default, as an Arrow array of type dt.
func defaultArray(d fieldDefault, dt arrow.DataType, n int) (arrow.Array, error) {
	if d.null {
		return array.MakeArrayOfNull(memory.DefaultAllocator, dt, n), nil
	}
	if ext, ok := dt.(arrow.ExtensionType); ok {
		// UUID: an extension over fixed_size_binary[16].
		storage, err := defaultArray(d, ext.StorageType(), n)
		if err != nil {
			return nil, err
		}
		defer storage.Release()
		return array.NewExtensionArrayWithStorage(ext, storage), nil
	}
	var goVal any
	switch l := d.lit.(type) {
	case iceberg.BoolLiteral:
		goVal = bool(l)
	case iceberg.Int32Literal:
		goVal = int32(l)
	case iceberg.Int64Literal:
		goVal = int64(l)
	case iceberg.Float32Literal:
		goVal = float32(l)
	case iceberg.Float64Literal:
		goVal = float64(l)
	case iceberg.DateLiteral:
		goVal = arrow.Date32(l)
	case iceberg.TimeLiteral:
		goVal = arrow.Time64(l)
	case iceberg.TimestampLiteral:
		goVal = arrow.Timestamp(l)
	case iceberg.TimestampNsLiteral:
		goVal = arrow.Timestamp(l)
	case iceberg.StringLiteral:
		goVal = string(l)
	case iceberg.BinaryLiteral:
		goVal = []byte(l)
	case iceberg.FixedLiteral:
		goVal = []byte(l)
	case iceberg.UUIDLiteral:
		goVal = l[:]
	case iceberg.DecimalLiteral:
		var sc scalar.Scalar
		switch dt.ID() {
		case arrow.DECIMAL128:
			sc = scalar.NewDecimal128Scalar(l.Val, dt)
		default:
			return nil, fmt.Errorf("decimal default as Arrow %s is not supported", dt)
		}
		return scalar.MakeArrayFromScalar(sc, n, memory.DefaultAllocator)
	default:
		return nil, fmt.Errorf("default %v (%T) has no Arrow form", d.lit, d.lit)
	}
	sc, err := scalar.MakeScalarParam(goVal, dt)
	if err != nil {
		return nil, fmt.Errorf("default %v as Arrow %s: %w", d.lit, dt, err)
	}
	return scalar.MakeArrayFromScalar(sc, n, memory.DefaultAllocator)
}
