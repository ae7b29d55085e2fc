package value

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// Side says which end of a range a decoded bound is: converting a bound to a
// coarser unit rounds a lower bound down and an upper bound up, so the
// converted range still contains every stored value.
type Side uint8

const (
	Lower Side = iota
	Upper
)

// StatDecoder turns plain-encoded Parquet statistics (footer min/max, page
// index min_values/max_values) of one column into Values of the column's
// Iceberg type.
type StatDecoder struct {
	decode func(b []byte, side Side) (Value, bool)
	// DeprecatedOK says whether min/max from the deprecated Statistics fields
	// (written without a column order) order the same way as Kind does.
	DeprecatedOK bool
}

// Decode decodes one encoded bound; ok is false for bytes it cannot read.
func (d *StatDecoder) Decode(b []byte, side Side) (Value, bool) { return d.decode(b, side) }

// NewStatDecoder returns the decoder for column col holding Iceberg type t.
// An error means the statistics of this column are not understood and must
// be treated as absent.
func NewStatDecoder(col *schema.Column, t iceberg.Type) (*StatDecoder, error) {
	phys := col.PhysicalType()
	lt := col.LogicalType()
	kind, ok := KindOf(t)
	if !ok {
		return nil, fmt.Errorf("type %s has no statistics order", t)
	}
	d := &StatDecoder{DeprecatedOK: col.SortOrder() == schema.SortSIGNED}
	mismatch := fmt.Errorf("column %s (%s %s) does not store %s", col.Path(), phys, lt, t)
	switch phys {
	case parquet.Types.Boolean:
		if kind != Bool {
			return nil, mismatch
		}
		d.decode = func(b []byte, _ Side) (Value, bool) {
			if len(b) != 1 {
				return Value{}, false
			}
			return OfBool(b[0] != 0), true
		}
	case parquet.Types.Int32:
		scale := int64(1)
		unsigned := false
		switch l := lt.(type) {
		case schema.IntLogicalType:
			unsigned = !l.IsSigned()
		case schema.DateLogicalType:
			if _, ok := t.(iceberg.DateType); !ok {
				return nil, mismatch
			}
		case schema.TimeLogicalType:
			if _, ok := t.(iceberg.TimeType); !ok || l.TimeUnit() != schema.TimeUnitMillis {
				return nil, mismatch
			}
			scale = 1000
		case schema.DecimalLogicalType:
			dt, ok := t.(iceberg.DecimalType)
			if !ok || int(l.Scale()) != dt.Scale() {
				return nil, mismatch
			}
			d.decode = func(b []byte, _ Side) (Value, bool) {
				if len(b) != 4 {
					return Value{}, false
				}
				return OfDecimal(big.NewInt(int64(int32(binary.LittleEndian.Uint32(b)))), l.Scale()), true
			}
			return d, nil
		case schema.NoLogicalType, nil:
		default:
			return nil, mismatch
		}
		if kind != Int {
			return nil, mismatch
		}
		d.decode = func(b []byte, _ Side) (Value, bool) {
			if len(b) != 4 {
				return Value{}, false
			}
			u := binary.LittleEndian.Uint32(b)
			if unsigned {
				return OfInt(int64(u) * scale), true
			}
			return OfInt(int64(int32(u)) * scale), true
		}
	case parquet.Types.Int64:
		mul, div := int64(1), int64(1)
		unsigned := false
		switch l := lt.(type) {
		case schema.IntLogicalType:
			unsigned = !l.IsSigned()
		case schema.TimestampLogicalType:
			if !isTimestamp(t) {
				return nil, mismatch
			}
			mul, div = unitRatio(l.TimeUnit(), IsNanosecond(t))
		case schema.TimeLogicalType:
			if _, ok := t.(iceberg.TimeType); !ok {
				return nil, mismatch
			}
			mul, div = unitRatio(l.TimeUnit(), false)
		case schema.DecimalLogicalType:
			dt, ok := t.(iceberg.DecimalType)
			if !ok || int(l.Scale()) != dt.Scale() {
				return nil, mismatch
			}
			d.decode = func(b []byte, _ Side) (Value, bool) {
				if len(b) != 8 {
					return Value{}, false
				}
				return OfDecimal(big.NewInt(int64(binary.LittleEndian.Uint64(b))), l.Scale()), true
			}
			return d, nil
		case schema.NoLogicalType, nil:
		default:
			return nil, mismatch
		}
		if kind != Int {
			return nil, mismatch
		}
		if unsigned {
			d.decode = func(b []byte, _ Side) (Value, bool) {
				if len(b) != 8 {
					return Value{}, false
				}
				return OfUint(binary.LittleEndian.Uint64(b)), true
			}
			return d, nil
		}
		d.decode = func(b []byte, side Side) (Value, bool) {
			if len(b) != 8 {
				return Value{}, false
			}
			v := int64(binary.LittleEndian.Uint64(b))
			if div > 1 {
				q := v / div
				if side == Lower && v%div != 0 && v < 0 {
					q--
				} else if side == Upper && v%div != 0 && v > 0 {
					q++
				}
				return OfInt(q), true
			}
			if mul > 1 {
				if v > math.MaxInt64/mul || v < math.MinInt64/mul {
					return Value{}, false
				}
				return OfInt(v * mul), true
			}
			return OfInt(v), true
		}
	case parquet.Types.Float:
		if kind != Float {
			return nil, mismatch
		}
		d.decode = func(b []byte, _ Side) (Value, bool) {
			if len(b) != 4 {
				return Value{}, false
			}
			return OfFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), true
		}
	case parquet.Types.Double:
		if kind != Float {
			return nil, mismatch
		}
		d.decode = func(b []byte, _ Side) (Value, bool) {
			if len(b) != 8 {
				return Value{}, false
			}
			return OfFloat(math.Float64frombits(binary.LittleEndian.Uint64(b))), true
		}
	case parquet.Types.ByteArray, parquet.Types.FixedLenByteArray:
		switch l := lt.(type) {
		case schema.DecimalLogicalType:
			dt, ok := t.(iceberg.DecimalType)
			if !ok || int(l.Scale()) != dt.Scale() {
				return nil, mismatch
			}
			d.decode = func(b []byte, _ Side) (Value, bool) {
				if len(b) == 0 {
					return Value{}, false
				}
				return DecimalFromTwosComplement(b, l.Scale()), true
			}
			return d, nil
		case schema.Float16LogicalType:
			if kind != Float {
				return nil, mismatch
			}
			d.decode = func(b []byte, _ Side) (Value, bool) {
				if len(b) != 2 {
					return Value{}, false
				}
				return OfFloat(float64(float16.FromBits(binary.LittleEndian.Uint16(b)).Float32())), true
			}
			return d, nil
		case schema.IntervalLogicalType:
			return nil, fmt.Errorf("column %s: INTERVAL has no order", col.Path())
		case schema.StringLogicalType, schema.EnumLogicalType, schema.JSONLogicalType, schema.BSONLogicalType,
			schema.UUIDLogicalType, schema.NoLogicalType, nil:
		default:
			return nil, mismatch
		}
		if kind != Bytes {
			return nil, mismatch
		}
		fixed := -1
		if phys == parquet.Types.FixedLenByteArray {
			fixed = col.TypeLength()
		}
		d.decode = func(b []byte, _ Side) (Value, bool) {
			if fixed >= 0 && len(b) != fixed {
				// Truncated fixed-width bounds are still bounds.
				if len(b) > fixed {
					return Value{}, false
				}
			}
			return OfBytes(b), true
		}
	default:
		return nil, fmt.Errorf("column %s: %s statistics have no defined order", col.Path(), phys)
	}
	return d, nil
}

func isTimestamp(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return true
	}
	return false
}

// unitRatio converts a stored time unit to the Iceberg unit (µs, or ns).
func unitRatio(u schema.TimeUnitType, nanos bool) (mul, div int64) {
	target := int64(1000) // µs per ms
	switch u {
	case schema.TimeUnitMillis:
		if nanos {
			return 1_000_000, 1
		}
		return target, 1
	case schema.TimeUnitMicros:
		if nanos {
			return 1000, 1
		}
		return 1, 1
	case schema.TimeUnitNanos:
		if nanos {
			return 1, 1
		}
		return 1, 1000
	}
	return 1, 1
}

// BloomHash returns the Parquet bloom filter hash of v as column col stores
// it, using hasher. ok is false when the stored representation of v is not
// exactly known (floats, unsigned or unit-converted columns, variable-width
// decimals): such a lookup must answer "maybe".
func BloomHash(col *schema.Column, t iceberg.Type, v Value, hasher metadata.Hasher) (uint64, bool) {
	lt := col.LogicalType()
	switch col.PhysicalType() {
	case parquet.Types.Int32:
		switch l := lt.(type) {
		case schema.IntLogicalType:
			if !l.IsSigned() {
				return 0, false
			}
		case schema.DateLogicalType, schema.NoLogicalType, nil:
		case schema.DecimalLogicalType:
			if v.K != Decimal || v.Scale != l.Scale() || !v.D.IsInt64() {
				return 0, false
			}
			x := v.D.Int64()
			if x < math.MinInt32 || x > math.MaxInt32 {
				return 0, false
			}
			return metadata.GetHash(hasher, int32(x)), true
		default:
			return 0, false
		}
		if v.K != Int || v.I < math.MinInt32 || v.I > math.MaxInt32 {
			return 0, false
		}
		return metadata.GetHash(hasher, int32(v.I)), true
	case parquet.Types.Int64:
		switch l := lt.(type) {
		case schema.IntLogicalType:
			if !l.IsSigned() {
				return 0, false
			}
		case schema.TimestampLogicalType:
			if mul, div := unitRatio(l.TimeUnit(), IsNanosecond(t)); mul != 1 || div != 1 {
				return 0, false
			}
		case schema.TimeLogicalType:
			if l.TimeUnit() != schema.TimeUnitMicros {
				return 0, false
			}
		case schema.DecimalLogicalType:
			if v.K != Decimal || v.Scale != l.Scale() || !v.D.IsInt64() {
				return 0, false
			}
			return metadata.GetHash(hasher, v.D.Int64()), true
		case schema.NoLogicalType, nil:
		default:
			return 0, false
		}
		if v.K != Int {
			return 0, false
		}
		return metadata.GetHash(hasher, v.I), true
	case parquet.Types.ByteArray:
		switch lt.(type) {
		case schema.StringLogicalType, schema.EnumLogicalType, schema.JSONLogicalType, schema.BSONLogicalType, schema.NoLogicalType, nil:
			if v.K != Bytes {
				return 0, false
			}
			return metadata.GetHash(hasher, parquet.ByteArray(v.B)), true
		}
		return 0, false
	case parquet.Types.FixedLenByteArray:
		switch l := lt.(type) {
		case schema.UUIDLogicalType, schema.NoLogicalType, nil:
			if v.K != Bytes || len(v.B) != col.TypeLength() {
				return 0, false
			}
			return metadata.GetHash(hasher, parquet.FixedLenByteArray(v.B)), true
		case schema.DecimalLogicalType:
			if v.K != Decimal || v.Scale != l.Scale() {
				return 0, false
			}
			b, ok := twosComplement(v.D, col.TypeLength())
			if !ok {
				return 0, false
			}
			return metadata.GetHash(hasher, parquet.FixedLenByteArray(b)), true
		}
	}
	return 0, false
}

// twosComplement encodes x big-endian in exactly n bytes.
func twosComplement(x *big.Int, n int) ([]byte, bool) {
	if n <= 0 {
		return nil, false
	}
	mod := new(big.Int).Lsh(big.NewInt(1), uint(n*8))
	half := new(big.Int).Rsh(mod, 1)
	if x.Cmp(half) >= 0 || x.Cmp(new(big.Int).Neg(half)) < 0 {
		return nil, false
	}
	y := new(big.Int).Set(x)
	if y.Sign() < 0 {
		y.Add(y, mod)
	}
	out := make([]byte, n)
	y.FillBytes(out)
	return out, true
}
