package predicate

import (
	"math"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Semantics is one engine family's view of NaN and signed zero.
type Semantics uint8

const (
	// IEEE: comparisons with NaN are false (except !=), -0.0 == +0.0
	// (Arrow compute, iceberg-go's scan).
	IEEE Semantics = iota
	// TotalOrder: NaN is greater than every number and equal to itself,
	// -0.0 < +0.0, IS NAN on NULL is false (Spark, DuckDB, Iceberg Java).
	TotalOrder
)

// Tri is a three-valued truth value.
type Tri int8

const (
	Unknown Tri = iota
	False
	True
)

func not(t Tri) Tri {
	switch t {
	case True:
		return False
	case False:
		return True
	}
	return Unknown
}

// Row gives a row's value of a field; null reports SQL NULL.
type Row func(fieldID int) (v value.Value, null bool)

// Eval evaluates a bound predicate on one row under sem. Residuals evaluate
// to TRUE (they are kept by the planner, so the oracle treats them as
// matching).
func Eval(e Expr, row Row, sem Semantics) Tri {
	switch x := e.(type) {
	case Const:
		if x.Value {
			return True
		}
		return False
	case Residual:
		return True
	case And:
		out := True
		for _, k := range x.Kids {
			switch Eval(k, row, sem) {
			case False:
				return False
			case Unknown:
				out = Unknown
			}
		}
		return out
	case Or:
		out := False
		for _, k := range x.Kids {
			switch Eval(k, row, sem) {
			case True:
				return True
			case Unknown:
				out = Unknown
			}
		}
		return out
	case Not:
		return not(Eval(x.Kid, row, sem))
	case *Leaf:
		v, null := row(x.FieldID)
		r := evalLeaf(x, v, null, sem)
		if x.Negated {
			return not(r)
		}
		return r
	}
	return Unknown
}

// Matches reports whether a row matches under either semantics: the rows a
// plan must never drop.
func Matches(e Expr, row Row) bool {
	return Eval(e, row, IEEE) == True || Eval(e, row, TotalOrder) == True
}

func evalLeaf(l *Leaf, v value.Value, null bool, sem Semantics) Tri {
	if null {
		switch l.Op {
		case OpIsNull:
			return True
		case OpIsNaN:
			if sem == TotalOrder {
				return False
			}
		}
		return Unknown
	}
	switch l.Op {
	case OpIsNull:
		return False
	case OpIsNaN:
		return tri(v.IsNaN())
	case OpStartsWith:
		return tri(value.HasPrefix(v, l.Lits[0]))
	case OpLike, OpILike:
		return tri(v.K == value.Bytes && Like(v.B, l.Lits[0].B, l.Op == OpILike))
	case OpArrayContains:
		if v.K != value.List {
			return Unknown
		}
		out := False
		for _, e := range v.L {
			if e.K == value.Invalid {
				out = Unknown
			} else if cmpRow(e, l.Lits[0], sem) == 0 {
				return True
			}
		}
		return out
	case OpIn:
		if found, ok := l.HasLiteral(v); ok {
			return tri(found)
		}
		for _, lit := range l.Lits {
			if cmpRow(v, lit, sem) == 0 {
				return True
			}
		}
		return False
	}
	c := cmpRow(v, l.Lits[0], sem)
	if c == incomparable {
		return False
	}
	switch l.Op {
	case OpEq:
		return tri(c == 0)
	case OpLt:
		return tri(c < 0)
	case OpLtEq:
		return tri(c <= 0)
	case OpGt:
		return tri(c > 0)
	case OpGtEq:
		return tri(c >= 0)
	}
	return Unknown
}

const incomparable = 2

// cmpRow compares a row value with a literal under sem; incomparable means
// every ordering comparison is false (IEEE NaN).
func cmpRow(v, lit value.Value, sem Semantics) int {
	if v.K == value.Float && lit.K == value.Float {
		a, b := v.F, lit.F
		if sem == IEEE {
			if math.IsNaN(a) || math.IsNaN(b) {
				return incomparable
			}
			return cmp3(a, b)
		}
		an, bn := math.IsNaN(a), math.IsNaN(b)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		if a == 0 && b == 0 {
			sa, sb := math.Signbit(a), math.Signbit(b)
			switch {
			case sa == sb:
				return 0
			case sa:
				return -1
			}
			return 1
		}
		return cmp3(a, b)
	}
	c, ok := value.Compare(v, lit)
	if !ok {
		return incomparable
	}
	return c
}

func cmp3(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func tri(b bool) Tri {
	if b {
		return True
	}
	return False
}
