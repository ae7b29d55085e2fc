package deletes

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Equality keys. Each column of a key tuple is encoded self-delimiting, by
// the value's canonical form for the column's Iceberg type (the table
// schema's), so values written under an older type compare equal after
// promotion:
//
//	null                     00
//	boolean                  01 b
//	int long date time ts*   01 int64 big-endian, in the Iceberg type's unit (days, µs, ns)
//	float double             01 float64 bits big-endian; every NaN one value; -0.0 != 0.0
//	decimal                  01 'D' scale(int32) then 'i' int64 | 'b' sign len magnitude, trailing zeros folded into the scale
//	string binary fixed uuid 01 uvarint length, bytes
//
// A key tuple is the concatenation of its columns' encodings.

type class int

const (
	clsBool class = iota
	clsInt
	clsFloat
	clsDecimal
	clsBytes
	clsNull // Iceberg's unknown type: always null
)

type unit int

const (
	unitNone unit = iota
	unitDays
	unitMillis
	unitMicros
	unitNanos
)

// target is how the values of one Iceberg type are canonicalized.
type target struct {
	typ   iceberg.Type
	cls   class
	unit  unit
	scale int32
}

func targetOf(t iceberg.Type) (target, error) {
	switch x := t.(type) {
	case iceberg.BooleanType:
		return target{typ: t, cls: clsBool}, nil
	case iceberg.Int32Type, iceberg.Int64Type:
		return target{typ: t, cls: clsInt}, nil
	case iceberg.DateType:
		return target{typ: t, cls: clsInt, unit: unitDays}, nil
	case iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType:
		return target{typ: t, cls: clsInt, unit: unitMicros}, nil
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return target{typ: t, cls: clsInt, unit: unitNanos}, nil
	case iceberg.Float32Type, iceberg.Float64Type:
		return target{typ: t, cls: clsFloat}, nil
	case iceberg.DecimalType:
		return target{typ: t, cls: clsDecimal, scale: int32(x.Scale())}, nil
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return target{typ: t, cls: clsBytes}, nil
	case iceberg.UnknownType:
		return target{typ: t, cls: clsNull}, nil
	}
	return target{}, perr.New(perr.FailedPrecondition, "equality deletes on columns of type %s are not supported", t)
}

// keyCol yields the encoding of one column, row after row.
type keyCol interface {
	appendNext(dst []byte) ([]byte, error)
}

// constCol is a column absent from a file: every row reads one value.
type constCol []byte

func (c constCol) appendNext(dst []byte) ([]byte, error) { return append(dst, c...), nil }

type encCol[T any] struct {
	c   *column[T]
	enc func(dst []byte, v T) []byte
}

func (e *encCol[T]) appendNext(dst []byte) ([]byte, error) {
	v, null, err := e.c.next()
	if err != nil {
		return dst, err
	}
	if null {
		return append(dst, 0), nil
	}
	return e.enc(append(dst, 1), v), nil
}

func mk[T any](r interface {
	ReadBatch(int64, []T, []int16, []int16) (int64, int, error)
}, col *schema.Column, enc func([]byte, T) []byte) keyCol {
	return &encCol[T]{c: newColumn[T](r, col.MaxDefinitionLevel(), batchRows), enc: enc}
}

// newKeyCol reads one leaf column chunk as canonical values of t.
func newKeyCol(ccr file.ColumnChunkReader, col *schema.Column, t target) (keyCol, error) {
	mismatch := func() error {
		return perr.New(perr.FailedPrecondition, "column %s is Parquet %s (%s), which cannot hold Iceberg %s",
			col.Path(), col.PhysicalType(), logicalName(col), t.typ)
	}
	switch t.cls {
	case clsNull:
		return constCol{0}, nil
	case clsBool:
		if r, ok := ccr.(*file.BooleanColumnChunkReader); ok {
			return mk(r, col, func(d []byte, v bool) []byte {
				if v {
					return append(d, 1)
				}
				return append(d, 0)
			}), nil
		}
	case clsInt:
		conv, err := unitConv(sourceUnit(col), t.unit)
		if err != nil {
			return nil, perr.New(perr.FailedPrecondition, "column %s: %v", col.Path(), err)
		}
		switch r := ccr.(type) {
		case *file.Int32ColumnChunkReader:
			if isUnsigned(col) {
				return mk(r, col, func(d []byte, v int32) []byte { return appendI64(d, conv(int64(uint32(v)))) }), nil
			}
			return mk(r, col, func(d []byte, v int32) []byte { return appendI64(d, conv(int64(v))) }), nil
		case *file.Int64ColumnChunkReader:
			return mk(r, col, func(d []byte, v int64) []byte { return appendI64(d, conv(v)) }), nil
		case *file.Int96ColumnChunkReader:
			return mk(r, col, func(d []byte, v parquet.Int96) []byte { return appendI64(d, conv(int96Nanos(v))) }), nil
		}
	case clsFloat:
		switch r := ccr.(type) {
		case *file.Float32ColumnChunkReader:
			return mk(r, col, func(d []byte, v float32) []byte { return appendF64(d, float64(v)) }), nil
		case *file.Float64ColumnChunkReader:
			return mk(r, col, appendF64), nil
		}
	case clsDecimal:
		scale, ok := decimalScale(col)
		if !ok {
			scale = t.scale
		}
		switch r := ccr.(type) {
		case *file.Int32ColumnChunkReader:
			return mk(r, col, func(d []byte, v int32) []byte { return appendDecimal64(d, int64(v), scale) }), nil
		case *file.Int64ColumnChunkReader:
			return mk(r, col, func(d []byte, v int64) []byte { return appendDecimal64(d, v, scale) }), nil
		case *file.ByteArrayColumnChunkReader:
			return mk(r, col, func(d []byte, v parquet.ByteArray) []byte { return appendDecimalBytes(d, v, scale) }), nil
		case *file.FixedLenByteArrayColumnChunkReader:
			return mk(r, col, func(d []byte, v parquet.FixedLenByteArray) []byte { return appendDecimalBytes(d, v, scale) }), nil
		}
	case clsBytes:
		switch r := ccr.(type) {
		case *file.ByteArrayColumnChunkReader:
			return mk(r, col, func(d []byte, v parquet.ByteArray) []byte { return appendBytes(d, v) }), nil
		case *file.FixedLenByteArrayColumnChunkReader:
			return mk(r, col, func(d []byte, v parquet.FixedLenByteArray) []byte { return appendBytes(d, v) }), nil
		}
	}
	return nil, mismatch()
}

func logicalName(col *schema.Column) string {
	if lt := col.LogicalType(); lt != nil && !lt.Equals(schema.NoLogicalType{}) {
		return lt.String()
	}
	if ct := col.ConvertedType(); ct != schema.ConvertedTypes.None {
		return ct.String()
	}
	return "no logical type"
}

func isUnsigned(col *schema.Column) bool {
	if lt, ok := col.LogicalType().(schema.IntLogicalType); ok {
		return !lt.IsSigned()
	}
	return col.ConvertedType() == schema.ConvertedTypes.Uint32
}

// sourceUnit is the time unit a column's integers are stored in.
func sourceUnit(col *schema.Column) unit {
	if col.PhysicalType() == parquet.Types.Int96 {
		return unitNanos
	}
	switch lt := col.LogicalType().(type) {
	case schema.DateLogicalType:
		return unitDays
	case schema.TimestampLogicalType:
		return fromTimeUnit(lt.TimeUnit())
	case schema.TimeLogicalType:
		return fromTimeUnit(lt.TimeUnit())
	}
	switch col.ConvertedType() {
	case schema.ConvertedTypes.Date:
		return unitDays
	case schema.ConvertedTypes.TimestampMillis, schema.ConvertedTypes.TimeMillis:
		return unitMillis
	case schema.ConvertedTypes.TimestampMicros, schema.ConvertedTypes.TimeMicros:
		return unitMicros
	}
	return unitNone
}

func fromTimeUnit(u schema.TimeUnitType) unit {
	switch u {
	case schema.TimeUnitMillis:
		return unitMillis
	case schema.TimeUnitNanos:
		return unitNanos
	}
	return unitMicros
}

// unitConv converts integers stored in unit from to unit to. Unannotated
// integers are taken to be in the target's unit already.
func unitConv(from, to unit) (func(int64) int64, error) {
	if from == unitNone || to == unitNone || from == to {
		return func(v int64) int64 { return v }, nil
	}
	perUnit := map[unit]int64{unitMillis: 1_000_000, unitMicros: 1_000, unitNanos: 1, unitDays: 86_400_000_000_000}
	if to == unitDays {
		return nil, fmt.Errorf("a time or timestamp cannot be read as a date")
	}
	f, t := perUnit[from], perUnit[to]
	if f >= t {
		m := f / t
		return func(v int64) int64 { return v * m }, nil
	}
	d := t / f
	return func(v int64) int64 { return floorDiv(v, d) }, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// int96Nanos is a legacy INT96 timestamp (nanoseconds of the day, then the
// Julian day) in nanoseconds since the Unix epoch.
func int96Nanos(v parquet.Int96) int64 {
	nanos := int64(binary.LittleEndian.Uint64(v[:8]))
	day := int64(binary.LittleEndian.Uint32(v[8:]))
	return (day-2_440_588)*86_400_000_000_000 + nanos
}

func decimalScale(col *schema.Column) (int32, bool) {
	if lt, ok := col.LogicalType().(schema.DecimalLogicalType); ok {
		return lt.Scale(), true
	}
	if pn, ok := col.SchemaNode().(*schema.PrimitiveNode); ok {
		if dm := pn.DecimalMetadata(); dm.IsSet {
			return dm.Scale, true
		}
	}
	return 0, false
}

func appendI64(d []byte, v int64) []byte { return binary.BigEndian.AppendUint64(d, uint64(v)) }

func appendF64(d []byte, v float64) []byte {
	bits := math.Float64bits(v)
	if math.IsNaN(v) {
		bits = canonicalNaNBits
	}
	return binary.BigEndian.AppendUint64(d, bits)
}

func appendBytes(d []byte, v []byte) []byte {
	return append(binary.AppendUvarint(d, uint64(len(v))), v...)
}

// appendDecimal64 encodes unscaled×10^-scale with trailing zeros folded
// into the scale, so equal values encode equally at any scale.
func appendDecimal64(d []byte, u int64, scale int32) []byte {
	if u == 0 {
		scale = 0
	}
	for u != 0 && u%10 == 0 {
		u /= 10
		scale--
	}
	d = binary.BigEndian.AppendUint32(append(d, 'D'), uint32(scale))
	return appendI64(append(d, 'i'), u)
}

// appendDecimalBytes encodes a big-endian two's complement unscaled value.
func appendDecimalBytes(d []byte, b []byte, scale int32) []byte {
	if len(b) <= 8 {
		var u int64
		if len(b) > 0 && b[0]&0x80 != 0 {
			u = -1
		}
		for _, c := range b {
			u = u<<8 | int64(c)
		}
		return appendDecimal64(d, u, scale)
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return appendDecimalBig(d, v, scale)
}

func appendDecimalBig(d []byte, v *big.Int, scale int32) []byte {
	u, s := normalizeDecimal(v, scale)
	if u.IsInt64() {
		return appendDecimal64(d, u.Int64(), s)
	}
	d = binary.BigEndian.AppendUint32(append(d, 'D'), uint32(s))
	d = append(d, 'b', byte(u.Sign()+1))
	return appendBytes(d, new(big.Int).Abs(u).Bytes())
}

// defaultEncoding is the encoding of a column absent from a data file: its
// initial-default, or null.
func defaultEncoding(f iceberg.NestedField, t target) ([]byte, error) {
	v := f.InitialDefault
	if v == nil || t.cls == clsNull {
		return []byte{0}, nil
	}
	enc, err := encodeGo(v, t)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "field %d (%s): initial-default %v (%T): %v", f.ID, f.Name, v, v, err)
	}
	return append([]byte{1}, enc...), nil
}

// encodeGo encodes a Go value (as iceberg-go or JSON decoding gives it) in
// the canonical form of t, without the null tag.
func encodeGo(v any, t target) ([]byte, error) {
	if lit, ok := v.(iceberg.Literal); ok {
		v = literalValue(lit)
	}
	switch t.cls {
	case clsBool:
		if b, ok := v.(bool); ok {
			return []byte{b2u(b)}, nil
		}
	case clsInt:
		switch x := v.(type) {
		case int:
			return appendI64(nil, int64(x)), nil
		case int32:
			return appendI64(nil, int64(x)), nil
		case int64:
			return appendI64(nil, x), nil
		case float64: // a JSON number
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return appendI64(nil, int64(x)), nil
			}
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return appendI64(nil, i), nil
			}
		case iceberg.Date:
			return appendI64(nil, int64(x)), nil
		case iceberg.Time:
			return appendI64(nil, int64(x)), nil
		case iceberg.Timestamp:
			return appendI64(nil, int64(x)), nil
		case iceberg.TimestampNano:
			return appendI64(nil, int64(x)), nil
		case string:
			lit, err := iceberg.NewLiteral(x).To(t.typ)
			if err != nil {
				return nil, err
			}
			return encodeGo(lit, t)
		}
	case clsFloat:
		switch x := v.(type) {
		case float32:
			return appendF64(nil, float64(x)), nil
		case float64:
			return appendF64(nil, x), nil
		case int:
			return appendF64(nil, float64(x)), nil
		case int64:
			return appendF64(nil, float64(x)), nil
		}
	case clsDecimal:
		switch x := v.(type) {
		case iceberg.Decimal:
			return appendDecimalBig(nil, x.Val.BigInt(), int32(x.Scale)), nil
		case string:
			lit, err := iceberg.NewLiteral(x).To(t.typ)
			if err != nil {
				return nil, err
			}
			return encodeGo(lit, t)
		case float64:
			lit, err := iceberg.NewLiteral(x).To(t.typ)
			if err != nil {
				return nil, err
			}
			return encodeGo(lit, t)
		}
	case clsBytes:
		switch x := v.(type) {
		case []byte:
			return appendBytes(nil, x), nil
		case uuid.UUID:
			return appendBytes(nil, x[:]), nil
		case string:
			switch t.typ.(type) {
			case iceberg.StringType:
				return appendBytes(nil, []byte(x)), nil
			case iceberg.UUIDType:
				u, err := uuid.Parse(x)
				if err != nil {
					return nil, err
				}
				return appendBytes(nil, u[:]), nil
			default: // binary and fixed defaults are hex in metadata JSON
				b, err := hex.DecodeString(strings.TrimPrefix(x, "0x"))
				if err != nil {
					return nil, err
				}
				return appendBytes(nil, b), nil
			}
		}
	}
	return nil, fmt.Errorf("cannot be read as %s", t.typ)
}

// literalValue unwraps an iceberg-go literal to its Go value.
func literalValue(lit iceberg.Literal) any {
	switch x := lit.(type) {
	case iceberg.TypedLiteral[bool]:
		return x.Value()
	case iceberg.TypedLiteral[int32]:
		return x.Value()
	case iceberg.TypedLiteral[int64]:
		return x.Value()
	case iceberg.TypedLiteral[float32]:
		return x.Value()
	case iceberg.TypedLiteral[float64]:
		return x.Value()
	case iceberg.TypedLiteral[iceberg.Date]:
		return x.Value()
	case iceberg.TypedLiteral[iceberg.Time]:
		return x.Value()
	case iceberg.TypedLiteral[iceberg.Timestamp]:
		return x.Value()
	case iceberg.TypedLiteral[iceberg.TimestampNano]:
		return x.Value()
	case iceberg.TypedLiteral[string]:
		return x.Value()
	case iceberg.TypedLiteral[[]byte]:
		return x.Value()
	case iceberg.TypedLiteral[uuid.UUID]:
		return x.Value()
	case iceberg.TypedLiteral[iceberg.Decimal]:
		return x.Value()
	}
	return lit
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
