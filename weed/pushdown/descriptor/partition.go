// Package descriptor converts between the wire form of client-resolved files
// (DataFileDescriptor, DeleteFileRef) and the planner's and delete engine's
// types, and encodes partition values the way the wire carries them:
//
//	manifest entry ──FromManifest──▶ plan.DataFile / deletes.File
//	       ▲                                 │ ToDescriptor (connectors, tests)
//	       │ Validate (catalog-validated)    ▼
//	DataFileDescriptor{…, partition_values: {"1000": "2024-01-02"}, deletes: [DeleteFileRef…]}
//	       │ FromDescriptor (connector-trusted / after validation)
//	       ▼
//	plan.DataFile + []deletes.File
//
// Partition values are a JSON object keyed by partition field id whose
// values use Iceberg's single-value JSON serialization of the partition
// field's result type (the REST spec's form): numbers for int/long/float/
// double, "YYYY-MM-DD" dates, ISO-8601 times and timestamps, decimals as
// strings, lowercase hex for binary/fixed, the canonical UUID string. Keys
// are sorted, so equal partitions encode to equal bytes.
package descriptor

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// SourceType finds the type of a partition source field (across every
// schema of the table: a spec may outlive its source column).
type SourceType func(fieldID int) (iceberg.Type, bool)

// SchemasSourceType looks source fields up in schemas, newest first.
func SchemasSourceType(schemas []*iceberg.Schema) SourceType {
	return func(id int) (iceberg.Type, bool) {
		for i := len(schemas) - 1; i >= 0; i-- {
			if f, ok := schemas[i].FindFieldByID(id); ok {
				return f.Type, true
			}
		}
		return nil, false
	}
}

func resultType(pf iceberg.PartitionField, src SourceType) (iceberg.Type, error) {
	st, ok := src(pf.SourceID())
	if !ok {
		return nil, fmt.Errorf("partition field %d (%s): source field %d is in no schema of the table", pf.FieldID, pf.Name, pf.SourceID())
	}
	return pf.Transform.ResultType(st), nil
}

// EncodePartition encodes partition values (partition field id → value as
// iceberg-go's DataFile.Partition returns them; nil = null) under spec.
func EncodePartition(spec iceberg.PartitionSpec, src SourceType, p map[int]any) ([]byte, error) {
	type kv struct {
		id  int
		raw []byte
	}
	var out []kv
	seen := map[int]bool{}
	for _, pf := range spec.Fields() {
		seen[pf.FieldID] = true
		rt, err := resultType(pf, src)
		if err != nil {
			return nil, err
		}
		v, ok := p[pf.FieldID]
		if !ok || v == nil {
			out = append(out, kv{pf.FieldID, []byte("null")})
			continue
		}
		raw, err := encodeValue(rt, v)
		if err != nil {
			return nil, fmt.Errorf("partition field %d (%s, %s): %w", pf.FieldID, pf.Name, rt, err)
		}
		out = append(out, kv{pf.FieldID, raw})
	}
	for id := range p {
		if !seen[id] {
			return nil, fmt.Errorf("partition field %d is not in spec %d", id, spec.ID())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:", strconv.Itoa(e.id))
		b.Write(e.raw)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DecodePartition decodes partition values under spec into the Go types
// iceberg-go uses. Every field of the spec must be present (null allowed);
// unknown field ids and values of the wrong type are errors naming them.
func DecodePartition(b []byte, spec iceberg.PartitionSpec, src SourceType) (map[int]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		if spec.NumFields() == 0 {
			return map[int]any{}, nil
		}
		return nil, fmt.Errorf("partition values are empty but spec %d has %d fields", spec.ID(), spec.NumFields())
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("partition values are not a JSON object keyed by partition field id: %v", err)
	}
	byID := map[int]iceberg.PartitionField{}
	for _, pf := range spec.Fields() {
		byID[pf.FieldID] = pf
	}
	out := make(map[int]any, len(raw))
	for k, v := range raw {
		id, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("partition values: key %s is not a partition field id", perr.Quote(k))
		}
		pf, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("partition values: field id %d is not in spec %d", id, spec.ID())
		}
		rt, err := resultType(pf, src)
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(v)) == "null" {
			out[id] = nil
			continue
		}
		gv, err := decodeValue(rt, v)
		if err != nil {
			return nil, fmt.Errorf("partition field %d (%s, %s): %w", id, pf.Name, rt, err)
		}
		out[id] = gv
	}
	for id, pf := range byID {
		if _, ok := out[id]; !ok {
			return nil, fmt.Errorf("partition values: field %d (%s) of spec %d is missing", id, pf.Name, spec.ID())
		}
	}
	return out, nil
}

func encodeValue(t iceberg.Type, v any) ([]byte, error) {
	if u, ok := v.(uuid.UUID); ok {
		v = [16]byte(u)
	}
	val, err := value.FromGo(t, v)
	if err != nil {
		return nil, err
	}
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return json.Marshal(val.I == 1)
	case iceberg.Int32Type, iceberg.Int64Type:
		return []byte(strconv.FormatInt(val.I, 10)), nil
	case iceberg.Float32Type, iceberg.Float64Type:
		f := val.F
		switch {
		case math.IsNaN(f):
			return []byte(`"NaN"`), nil
		case math.IsInf(f, 1):
			return []byte(`"Infinity"`), nil
		case math.IsInf(f, -1):
			return []byte(`"-Infinity"`), nil
		}
		bits := 64
		if _, ok := t.(iceberg.Float32Type); ok {
			bits = 32
		}
		return []byte(strconv.FormatFloat(f, 'g', -1, bits)), nil
	case iceberg.DateType:
		return json.Marshal(time.Unix(val.I*86400, 0).UTC().Format("2006-01-02"))
	case iceberg.TimeType:
		d := time.Duration(val.I) * time.Microsecond
		return json.Marshal(time.Unix(0, 0).UTC().Add(d).Format("15:04:05.000000"))
	case iceberg.TimestampType:
		return json.Marshal(time.UnixMicro(val.I).UTC().Format("2006-01-02T15:04:05.000000"))
	case iceberg.TimestampTzType:
		return json.Marshal(time.UnixMicro(val.I).UTC().Format("2006-01-02T15:04:05.000000") + "+00:00")
	case iceberg.TimestampNsType:
		return json.Marshal(time.Unix(0, val.I).UTC().Format("2006-01-02T15:04:05.000000000"))
	case iceberg.TimestampTzNsType:
		return json.Marshal(time.Unix(0, val.I).UTC().Format("2006-01-02T15:04:05.000000000") + "+00:00")
	case iceberg.StringType:
		return json.Marshal(string(val.B))
	case iceberg.UUIDType:
		if len(val.B) != 16 {
			return nil, fmt.Errorf("uuid of %d bytes", len(val.B))
		}
		u, _ := uuid.FromBytes(val.B)
		return json.Marshal(u.String())
	case iceberg.BinaryType, iceberg.FixedType:
		return json.Marshal(hex.EncodeToString(val.B))
	case iceberg.DecimalType:
		return json.Marshal(decimalString(val.D, int32(tt.Scale())))
	}
	return nil, fmt.Errorf("type %s cannot be a partition value", t)
}

func decimalString(unscaled *big.Int, scale int32) string {
	neg := unscaled.Sign() < 0
	s := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		for len(s) <= int(scale) {
			s = "0" + s
		}
		s = s[:len(s)-int(scale)] + "." + s[len(s)-int(scale):]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func decodeValue(t iceberg.Type, raw json.RawMessage) (any, error) {
	str := func() (string, error) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("want a JSON string, got %s", raw)
		}
		return s, nil
	}
	integer := func(bits int) (int64, error) {
		var n json.Number
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' {
			return 0, fmt.Errorf("want a JSON integer, got %s", raw)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&n); err != nil {
			return 0, fmt.Errorf("want a JSON integer, got %s", raw)
		}
		return strconv.ParseInt(n.String(), 10, bits)
	}
	switch tt := t.(type) {
	case iceberg.BooleanType:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("want true or false, got %s", raw)
		}
		return b, nil
	case iceberg.Int32Type:
		n, err := integer(32)
		return int32(n), err
	case iceberg.Int64Type:
		return integer(64)
	case iceberg.Float32Type, iceberg.Float64Type:
		var f float64
		if s, err := str(); err == nil {
			switch s {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return nil, fmt.Errorf("want a JSON number, got %s", raw)
			}
		} else if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("want a JSON number, got %s", raw)
		}
		if _, ok := t.(iceberg.Float32Type); ok {
			return float32(f), nil
		}
		return f, nil
	case iceberg.DateType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, fmt.Errorf("date %s: want YYYY-MM-DD", perr.Quote(s))
		}
		return iceberg.Date(d.Unix() / 86400), nil
	case iceberg.TimeType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		d, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return nil, fmt.Errorf("time %s: want HH:MM:SS[.ffffff]", perr.Quote(s))
		}
		return iceberg.Time(int64(d.Hour())*3600e6 + int64(d.Minute())*60e6 + int64(d.Second())*1e6 + int64(d.Nanosecond()/1000)), nil
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		ts, err := parseTimestamp(s)
		if err != nil {
			return nil, err
		}
		if value.IsNanosecond(t) {
			return iceberg.TimestampNano(ts.UnixNano()), nil
		}
		return iceberg.Timestamp(ts.UnixMicro()), nil
	case iceberg.StringType:
		return str()
	case iceberg.UUIDType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("uuid %s: %v", perr.Quote(s), err)
		}
		return u, nil
	case iceberg.BinaryType, iceberg.FixedType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("binary %s: want hex", perr.Quote(s))
		}
		if ft, ok := t.(iceberg.FixedType); ok && len(b) != ft.Len() {
			return nil, fmt.Errorf("fixed[%d] value of %d bytes", ft.Len(), len(b))
		}
		return b, nil
	case iceberg.DecimalType:
		s, err := str()
		if err != nil {
			return nil, err
		}
		return parseDecimal(s, tt.Scale())
	}
	return nil, fmt.Errorf("type %s cannot be a partition value", t)
}

func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %s: want ISO-8601 (2006-01-02T15:04:05.000000[+00:00])", perr.Quote(s))
}

func parseDecimal(s string, scale int) (iceberg.Decimal, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	if len(frac) > scale || whole == "" && frac == "" {
		return iceberg.Decimal{}, fmt.Errorf("decimal %s does not have scale %d", perr.Quote(s), scale)
	}
	frac += strings.Repeat("0", scale-len(frac))
	n, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok {
		return iceberg.Decimal{}, fmt.Errorf("decimal %s is not a number", perr.Quote(s))
	}
	if neg {
		n.Neg(n)
	}
	v, err := decimalOf(n, scale)
	if err != nil {
		return iceberg.Decimal{}, fmt.Errorf("decimal %s: %v", perr.Quote(s), err)
	}
	return v, nil
}

func decimalOf(n *big.Int, scale int) (iceberg.Decimal, error) {
	if n.BitLen() > 127 {
		return iceberg.Decimal{}, fmt.Errorf("exceeds 38 digits")
	}
	return iceberg.Decimal{Val: decimal128.FromBigInt(n), Scale: scale}, nil
}
