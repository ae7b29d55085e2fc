package plan

import (
	"math"
	"math/big"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// narrowFilesByManifest skips the files whose manifest entry says they
// cannot match (pure CPU per file, spread over workers goroutines).
func narrowFilesByManifest(t *Table, e predicate.Expr, plans []*FilePlan, workers int) {
	forEachIndex(len(plans), workers, func(i int) {
		if fp := plans[i]; PruneByManifest(t, fp.File, e) == prune.CannotMatch {
			fp.skipFile(TierManifest)
		}
	})
}

// PruneByManifest decides a whole file from its manifest entry: column
// bounds, null/NaN/value counts and partition values.
func PruneByManifest(t *Table, f *DataFile, e predicate.Expr) prune.Verdict {
	if e == nil {
		return prune.MightMatch
	}
	spec, hasSpec := t.Specs[int(f.SpecID)]
	return prune.EvaluateWith(e, func(l *predicate.Leaf) prune.Verdict {
		if prune.EvaluateLeaf(l, manifestColumnStats(t, f, l)) == prune.CannotMatch {
			return prune.CannotMatch
		}
		if hasSpec {
			for _, pf := range spec.FieldsBySourceID(l.FieldID) {
				pv, present := f.Partition[pf.FieldID]
				if !present {
					continue
				}
				if prune.EvaluateLeaf(l, partitionStats(pf, l.Type, pv)) == prune.CannotMatch {
					return prune.CannotMatch
				}
				if transformExcludes(pf, l, pv) {
					return prune.CannotMatch
				}
			}
		}
		return prune.MightMatch
	})
}

// manifestColumnStats reads a field's metrics from the manifest entry.
func manifestColumnStats(t *Table, f *DataFile, l *predicate.Leaf) prune.ColumnStats {
	var s prune.ColumnStats
	id := l.FieldID
	st := f.Stats
	if field, ok := t.Schema.FindFieldByID(id); ok && field.InitialDefault != nil {
		// Rows written before the column existed read its default: the
		// metrics do not describe them.
		return s
	}
	nulls, hasNulls := st.Nulls[id]
	nans, hasNaNs := st.NaNs[id]
	vals, hasVals := st.Values[id]
	if hasNulls && nulls >= 0 {
		s.NullsKnown, s.HasNulls = true, nulls > 0
	}
	if hasNaNs && nans >= 0 {
		s.NaNsKnown, s.HasNaNs = true, nans > 0
	}
	if hasVals && hasNulls && vals >= 0 && nulls >= 0 {
		s.NonNullKnown, s.HasNonNull = true, vals-nulls > 0
	}
	lo, okLo := st.Lower[id]
	hi, okHi := st.Upper[id]
	if okLo && okHi {
		lv, err1 := value.FromIcebergBound(l.Type, lo)
		hv, err2 := value.FromIcebergBound(l.Type, hi)
		if err1 == nil && err2 == nil && !lv.IsNaN() && !hv.IsNaN() {
			if c, ok := value.Compare(lv, hv); ok && c <= 0 {
				s.HasBounds, s.Lower, s.Upper = true, lv, hv
			}
		}
	}
	return s
}

// partitionStats turns a partition value into bounds on its source column.
func partitionStats(pf iceberg.PartitionField, srcType iceberg.Type, pv any) prune.ColumnStats {
	var s prune.ColumnStats
	if pv == nil {
		switch pf.Transform.(type) {
		case iceberg.VoidTransform:
			return s
		}
		// Every transform maps NULL to NULL and only NULL.
		return prune.AllNull()
	}
	switch tr := pf.Transform.(type) {
	case iceberg.IdentityTransform:
		v, err := value.FromGo(srcType, normalizeGo(pv))
		if err != nil || v.IsNaN() {
			return s
		}
		s.HasBounds, s.Lower, s.Upper = true, v, v
		s.NonNullKnown, s.HasNonNull = true, true
		s.NullsKnown, s.HasNulls = true, false
		if value.IsFloat(srcType) {
			s.NaNsKnown = true
		}
	case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform, iceberg.HourTransform:
		n, ok := asInt64(pv)
		if !ok {
			return s
		}
		lo, hi, ok := timeBounds(tr, n, srcType)
		if !ok {
			return s
		}
		s.HasBounds, s.Lower, s.Upper = true, value.OfInt(lo), value.OfInt(hi)
		s.NullsKnown, s.HasNulls = true, false
		s.NonNullKnown, s.HasNonNull = true, true
	case iceberg.TruncateTransform:
		s.NullsKnown, s.HasNulls = true, false
		s.NonNullKnown, s.HasNonNull = true, true
		switch srcType.(type) {
		case iceberg.Int32Type, iceberg.Int64Type:
			n, ok := asInt64(pv)
			if !ok || tr.Width <= 0 || n > math.MaxInt64-int64(tr.Width) {
				return prune.ColumnStats{}
			}
			s.HasBounds, s.Lower, s.Upper = true, value.OfInt(n), value.OfInt(n+int64(tr.Width)-1)
		case iceberg.DecimalType:
			v, err := value.FromGo(srcType, pv)
			if err != nil || tr.Width <= 0 {
				return prune.ColumnStats{}
			}
			hi := value.OfDecimal(new(big.Int).Add(v.D, big.NewInt(int64(tr.Width-1))), v.Scale)
			s.HasBounds, s.Lower, s.Upper = true, v, hi
		case iceberg.StringType, iceberg.BinaryType:
			var prefix []byte
			switch x := pv.(type) {
			case string:
				prefix = []byte(x)
			case []byte:
				prefix = x
			default:
				return prune.ColumnStats{}
			}
			up, ok := successor(prefix)
			if !ok {
				return prune.ColumnStats{}
			}
			s.HasBounds, s.Lower, s.Upper = true, value.OfBytes(prefix), value.OfBytes(up)
		default:
			return prune.ColumnStats{}
		}
	}
	return s
}

// transformExcludes reports whether the partition value proves that no
// value of an = or IN leaf is in this file: the partition transform applied
// to every literal differs from the file's partition value. Any conversion
// it cannot do answers "maybe".
func transformExcludes(pf iceberg.PartitionField, l *predicate.Leaf, pv any) bool {
	if _, void := pf.Transform.(iceberg.VoidTransform); void || pv == nil {
		return false
	}
	if l.Negated || (l.Op != predicate.OpEq && l.Op != predicate.OpIn) || len(l.Raw) == 0 || value.IsFloat(l.Type) {
		return false
	}
	resultType := pf.Transform.ResultType(l.Type)
	part, err := value.FromGo(resultType, normalizeGo(pv))
	if err != nil {
		return false
	}
	for _, raw := range l.Raw {
		lit, err := raw.To(l.Type)
		if err != nil {
			return false
		}
		out := safeApply(pf.Transform, lit)
		if !out.Valid || out.Val == nil {
			return false
		}
		got, err := value.FromLiteral(resultType, out.Val)
		if err != nil {
			return false
		}
		if c, ok := value.Compare(got, part); !ok || c == 0 {
			return false
		}
	}
	return true
}

func safeApply(tr iceberg.Transform, lit iceberg.Literal) (out iceberg.Optional[iceberg.Literal]) {
	defer func() {
		if recover() != nil {
			out = iceberg.Optional[iceberg.Literal]{}
		}
	}()
	return tr.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: lit})
}

func normalizeGo(v any) any {
	switch x := v.(type) {
	case uuid.UUID:
		return [16]byte(x)
	}
	return v
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case iceberg.Date:
		return int64(x), true
	case iceberg.Int32Literal:
		return int64(x), true
	case iceberg.Int64Literal:
		return int64(x), true
	case iceberg.DateLiteral:
		return int64(x), true
	}
	return 0, false
}

// timeBounds is the range of source values (in the source type's unit) that
// a year/month/day/hour partition value n covers.
func timeBounds(tr iceberg.Transform, n int64, src iceberg.Type) (lo, hi int64, ok bool) {
	if n < -1_000_000 || n > 1_000_000_000 {
		return 0, 0, false
	}
	var start, end time.Time
	switch tr.(type) {
	case iceberg.YearTransform:
		start = time.Date(1970+int(n), 1, 1, 0, 0, 0, 0, time.UTC)
		end = start.AddDate(1, 0, 0)
	case iceberg.MonthTransform:
		start = time.Date(1970, time.Month(1+n), 1, 0, 0, 0, 0, time.UTC)
		end = start.AddDate(0, 1, 0)
	case iceberg.DayTransform:
		start = time.Unix(0, 0).UTC().AddDate(0, 0, int(n))
		end = start.AddDate(0, 0, 1)
	case iceberg.HourTransform:
		start = time.Unix(n*3600, 0).UTC()
		end = start.Add(time.Hour)
	default:
		return 0, 0, false
	}
	switch src.(type) {
	case iceberg.DateType:
		d0 := floorDiv(start.Unix(), 86400)
		d1 := floorDiv(end.Unix(), 86400)
		return d0, d1 - 1, true
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return start.UnixMicro(), end.UnixMicro() - 1, true
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if start.Year() < 1678 || end.Year() > 2261 {
			return 0, 0, false
		}
		return start.UnixNano(), end.UnixNano() - 1, true
	}
	return 0, 0, false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// successor returns the smallest byte string greater than every string with
// prefix p; ok is false when none exists (p is all 0xFF).
func successor(p []byte) ([]byte, bool) {
	out := append([]byte{}, p...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] < 0xFF {
			out[i]++
			return out[:i+1], true
		}
	}
	return nil, false
}

// IdentityRow is the row every record of f holds in the fields e
// references, when each of them is the source of an identity partition
// field of f's spec with a recorded value (nil: NULL): e evaluated on it
// decides the whole file. ok is false when some field is not such a
// source or its value does not convert.
func IdentityRow(t *Table, f *DataFile, e predicate.Expr) (row predicate.Row, ok bool) {
	spec, hasSpec := t.Specs[int(f.SpecID)]
	if !hasSpec || t.Schema == nil {
		return nil, false
	}
	vals := map[int]*value.Value{}
	for _, id := range predicate.FieldIDs(e) {
		field, found := t.Schema.FindFieldByID(id)
		if !found {
			return nil, false
		}
		known := false
		for _, pf := range spec.FieldsBySourceID(id) {
			pv, present := f.Partition[pf.FieldID]
			if _, identity := pf.Transform.(iceberg.IdentityTransform); !identity || !present {
				continue
			}
			if pv == nil {
				vals[id], known = nil, true
				break
			}
			v, err := value.FromGo(field.Type, normalizeGo(pv))
			if err != nil {
				return nil, false
			}
			vals[id], known = &v, true
			break
		}
		if !known {
			return nil, false
		}
	}
	return func(id int) (value.Value, bool) {
		v := vals[id]
		if v == nil {
			return value.Value{}, true
		}
		return *v, false
	}, true
}

// IsIdentitySource reports whether field id is the source of an identity
// partition field of f's spec.
func IsIdentitySource(t *Table, f *DataFile, id int) bool {
	spec, ok := t.Specs[int(f.SpecID)]
	if !ok {
		return false
	}
	for _, pf := range spec.FieldsBySourceID(id) {
		if _, identity := pf.Transform.(iceberg.IdentityTransform); identity {
			return true
		}
	}
	return false
}
