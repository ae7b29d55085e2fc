// Package prune decides, from statistics alone, whether a set of rows (a
// file, a row group, a page) cannot contain a row matching a predicate.
//
// Verdict's zero value is MightMatch, and ColumnStats's zero value knows
// nothing: every missing, unreadable or not-understood statistic therefore
// keeps the rows. A bug here costs speed, never rows.
//
// A set of rows is seen as up to three classes of values per column:
//
//	null class      present unless null counts say there are none
//	NaN class       float columns, present unless NaN counts say none
//	ordinary class  non-null, non-NaN values inside [Lower, Upper] when
//	                bounds are known (bounds may be inexact, e.g. truncated)
//
// A leaf might match when some present class holds a value that satisfies
// it under IEEE or total-order semantics (see package predicate).
package prune

import (
	"math"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Verdict is what statistics say about a set of rows and a predicate.
type Verdict uint8

const (
	// MightMatch keeps the rows (the zero value: "don't know").
	MightMatch Verdict = iota
	// CannotMatch proves no row matches.
	CannotMatch
)

func (v Verdict) String() string {
	if v == CannotMatch {
		return "cannot match"
	}
	return "might match"
}

// ColumnStats summarizes one column over a set of rows. The zero value
// knows nothing.
type ColumnStats struct {
	HasBounds    bool        // Lower/Upper bound every non-null, non-NaN value
	Lower, Upper value.Value // inclusive; may be looser than the true min/max
	NullsKnown   bool        // HasNulls is authoritative
	HasNulls     bool
	NaNsKnown    bool // HasNaNs is authoritative
	HasNaNs      bool
	NonNullKnown bool // HasNonNull is authoritative
	HasNonNull   bool
}

// AllNull describes a column whose every value is null (e.g. a column added
// to the table after the file was written, with no default).
func AllNull() ColumnStats {
	return ColumnStats{NullsKnown: true, HasNulls: true, NonNullKnown: true, HasNonNull: false, NaNsKnown: true}
}

func (s ColumnStats) nullPossible() bool    { return !s.NullsKnown || s.HasNulls }
func (s ColumnStats) nonNullPossible() bool { return !s.NonNullKnown || s.HasNonNull }
func (s ColumnStats) nanPossible(float bool) bool {
	return float && s.nonNullPossible() && (!s.NaNsKnown || s.HasNaNs)
}

// StatsFunc returns the statistics of a field (by Iceberg field id).
type StatsFunc func(fieldID int) ColumnStats

// Evaluate returns CannotMatch only when the statistics prove that no row
// matches the bound, normalized predicate e.
func Evaluate(e predicate.Expr, stats StatsFunc) Verdict {
	return EvaluateWith(e, func(l *predicate.Leaf) Verdict { return EvaluateLeaf(l, stats(l.FieldID)) })
}

// EvaluateLeaf decides one comparison against one column's statistics.
func EvaluateLeaf(l *predicate.Leaf, s ColumnStats) Verdict {
	float := value.IsFloat(l.Type)
	if s.nullPossible() && nullClassMatches(l) {
		return MightMatch
	}
	if s.nanPossible(float) && nanClassMatches(l) {
		return MightMatch
	}
	if s.nonNullPossible() && ordinaryClassMatches(l, s) {
		return MightMatch
	}
	return CannotMatch
}

func nullClassMatches(l *predicate.Leaf) bool {
	switch l.Op {
	case predicate.OpIsNull:
		return !l.Negated
	case predicate.OpIsNaN:
		// NOT NAN on NULL is true in Iceberg's view.
		return l.Negated
	}
	// Comparisons with NULL are unknown, and so are their negations.
	return false
}

func nanClassMatches(l *predicate.Leaf) bool {
	if l.Negated {
		switch l.Op {
		case predicate.OpIsNull:
			return true // NaN is not null
		case predicate.OpIsNaN:
			return false
		}
		// NOT (NaN op c) is TRUE under IEEE for every comparison.
		return true
	}
	litNaN := len(l.Lits) > 0 && l.Lits[0].IsNaN()
	switch l.Op {
	case predicate.OpIsNaN:
		return true
	case predicate.OpIsNull:
		return false
	case predicate.OpEq, predicate.OpLtEq:
		return litNaN // total order: NaN == NaN
	case predicate.OpLt:
		return false
	case predicate.OpGt:
		return !litNaN // total order: NaN above every number
	case predicate.OpGtEq:
		return true
	case predicate.OpIn:
		for _, v := range l.Lits {
			if v.IsNaN() {
				return true
			}
		}
		return false
	}
	return true
}

// ordinaryClassMatches decides for non-null, non-NaN values.
func ordinaryClassMatches(l *predicate.Leaf, s ColumnStats) bool {
	switch l.Op {
	case predicate.OpIsNull:
		return l.Negated // ordinary values are NOT NULL
	case predicate.OpIsNaN:
		return l.Negated
	case predicate.OpArrayContains, predicate.OpILike:
		// Lists have no bounds; ILIKE folds case, which bounds do not.
		return true
	}
	if !s.HasBounds {
		return true
	}
	lo, hi := s.Lower, s.Upper
	if l.Negated {
		return negatedOrdinary(l, lo, hi)
	}
	switch l.Op {
	case predicate.OpEq:
		return inRange(lo, hi, l.Lits[0])
	case predicate.OpIn:
		if within, ok := l.AnyWithin(lo, hi); ok {
			return within
		}
		for _, v := range l.Lits {
			if inRange(lo, hi, v) {
				return true
			}
		}
		return false
	case predicate.OpLt:
		return lessThan(lo, l.Lits[0], true)
	case predicate.OpLtEq:
		return le(lo, l.Lits[0])
	case predicate.OpGt:
		return lessThan(l.Lits[0], hi, true)
	case predicate.OpGtEq:
		return le(l.Lits[0], hi)
	case predicate.OpStartsWith:
		p := l.Lits[0]
		// Values with prefix p form [p, succ(p)): intersects [lo, hi] iff
		// trunc(lo, |p|) <= p and hi >= p.
		return le(value.TruncateBytes(lo, len(p.B)), p) && le(p, hi)
	case predicate.OpLike:
		// Every match starts with the pattern's literal prefix.
		p := value.OfString(predicate.LikePrefix(l.Lits[0].B))
		return len(p.B) == 0 || (le(value.TruncateBytes(lo, len(p.B)), p) && le(p, hi))
	}
	return true
}

// negatedOrdinary decides NOT (v op lits) for ordinary values in [lo, hi].
func negatedOrdinary(l *predicate.Leaf, lo, hi value.Value) bool {
	switch l.Op {
	case predicate.OpEq:
		return !allEqual(lo, hi, l.Lits[0])
	case predicate.OpIn:
		if c, ok := value.Compare(lo, hi); ok && c != 0 {
			return true // NOT IN fails everywhere only on a single value
		}
		if found, ok := l.HasLiteral(lo); ok && !found {
			return true
		}
		for _, v := range l.Lits {
			if allEqual(lo, hi, v) {
				return false
			}
		}
		return true
	case predicate.OpLt: // v >= c
		return le(l.Lits[0], hi)
	case predicate.OpLtEq: // v > c
		return lessThan(l.Lits[0], hi, true)
	case predicate.OpGt: // v <= c
		return le(lo, l.Lits[0])
	case predicate.OpGtEq: // v < c
		return lessThan(lo, l.Lits[0], true)
	case predicate.OpStartsWith:
		p := l.Lits[0]
		// Every value in [lo, hi] has prefix p iff lo and hi both do.
		return !(value.HasPrefix(lo, p) && value.HasPrefix(hi, p))
	}
	return true
}

// le reports a <= b; incomparable values answer true (keep).
func le(a, b value.Value) bool {
	c, ok := value.Compare(a, b)
	return !ok || c <= 0
}

// lessThan reports a < b; with zeroLoose, floats that compare equal at zero
// count as less (total order has -0.0 < +0.0). Incomparable answers true.
func lessThan(a, b value.Value, zeroLoose bool) bool {
	c, ok := value.Compare(a, b)
	if !ok {
		return true
	}
	if c == 0 && zeroLoose && a.IsZeroFloat() && b.IsZeroFloat() {
		return true
	}
	return c < 0
}

func inRange(lo, hi, v value.Value) bool {
	if v.IsNaN() {
		return false // ordinary values never equal NaN
	}
	return le(lo, v) && le(v, hi)
}

// allEqual reports whether every value in [lo, hi] equals v under both
// semantics; float zeros never qualify (-0.0 and +0.0 differ in total order).
func allEqual(lo, hi, v value.Value) bool {
	if v.IsNaN() || (v.K == value.Float && v.F == 0) {
		return false
	}
	if lo.K == value.Float && (math.IsInf(lo.F, 0) || lo.F == 0) {
		return false
	}
	c1, ok1 := value.Compare(lo, v)
	c2, ok2 := value.Compare(hi, v)
	return ok1 && ok2 && c1 == 0 && c2 == 0
}

// EvaluateWith composes per-leaf verdicts through AND/OR: CannotMatch only
// when leafFn's answers prove it. Residuals and unknown nodes might match.
func EvaluateWith(e predicate.Expr, leafFn func(*predicate.Leaf) Verdict) Verdict {
	switch x := e.(type) {
	case predicate.Const:
		if x.Value {
			return MightMatch
		}
		return CannotMatch
	case predicate.And:
		for _, k := range x.Kids {
			if EvaluateWith(k, leafFn) == CannotMatch {
				return CannotMatch
			}
		}
		return MightMatch
	case predicate.Or:
		for _, k := range x.Kids {
			if EvaluateWith(k, leafFn) == MightMatch {
				return MightMatch
			}
		}
		return CannotMatch
	case *predicate.Leaf:
		return leafFn(x)
	}
	return MightMatch
}
