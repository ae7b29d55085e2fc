package sqlstmt

// HAVING: a condition over a group's output items (aggregates, grouping
// columns, aliases) and literals, in SQL's three-valued logic: a group is
// kept when the condition is TRUE.

import (
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree/treecmp"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// cond is a bound HAVING condition.
type cond interface {
	eval(row []val, present []bool, types []arrow.DataType) (predicate.Tri, error)
}

// operand is an output item or a literal.
type operand struct {
	item int // -1: the literal
	lit  val
	ok   bool   // the literal is not NULL
	text string // the literal as written (typed against its item's column)
}

type andCond struct{ l, r cond }
type orCond struct{ l, r cond }
type notCond struct{ c cond }
type isNullCond struct {
	o   operand
	not bool
}
type cmpCond struct {
	l, r operand
	op   treecmp.ComparisonOperatorSymbol
}

// havingExpr wraps a bound condition as a tree.Expr so Statement keeps one
// field; it is never formatted.
type havingExpr struct {
	tree.Expr
	c cond
}

func (s *Statement) bindHaving(e tree.Expr) (tree.Expr, error) {
	c, err := s.bindCond(e)
	if err != nil {
		return nil, err
	}
	return &havingExpr{Expr: e, c: c}, nil
}

func (s *Statement) bindCond(e tree.Expr) (cond, error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return s.bindCond(x.Expr)
	case *tree.AndExpr:
		l, err := s.bindCond(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := s.bindCond(x.Right)
		if err != nil {
			return nil, err
		}
		return andCond{l, r}, nil
	case *tree.OrExpr:
		l, err := s.bindCond(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := s.bindCond(x.Right)
		if err != nil {
			return nil, err
		}
		return orCond{l, r}, nil
	case *tree.NotExpr:
		c, err := s.bindCond(x.Expr)
		if err != nil {
			return nil, err
		}
		return notCond{c}, nil
	case *tree.IsNullExpr:
		o, err := s.operand(x.Expr)
		if err != nil {
			return nil, err
		}
		return isNullCond{o: o}, nil
	case *tree.IsNotNullExpr:
		o, err := s.operand(x.Expr)
		if err != nil {
			return nil, err
		}
		return isNullCond{o: o, not: true}, nil
	case *tree.RangeCond:
		if x.Symmetric {
			return nil, Unsupported("BETWEEN SYMMETRIC in HAVING")
		}
		l, err := s.operand(x.Left)
		if err != nil {
			return nil, err
		}
		lo, err := s.operand(x.From)
		if err != nil {
			return nil, err
		}
		hi, err := s.operand(x.To)
		if err != nil {
			return nil, err
		}
		var c cond = andCond{cmpCond{l, lo, treecmp.GE}, cmpCond{l, hi, treecmp.LE}}
		if x.Not {
			c = notCond{c}
		}
		return c, nil
	case *tree.ComparisonExpr:
		switch x.Operator.Symbol {
		case treecmp.EQ, treecmp.NE, treecmp.LT, treecmp.LE, treecmp.GT, treecmp.GE:
		default:
			return nil, Unsupported("the operator " + x.Operator.String() + " in HAVING")
		}
		l, err := s.operand(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := s.operand(x.Right)
		if err != nil {
			return nil, err
		}
		if l.item < 0 && r.item < 0 {
			return nil, Unsupported("HAVING " + perr.Quote(tree.AsString(x)) + " (a comparison of two literals)")
		}
		return cmpCond{l, r, x.Operator.Symbol}, nil
	}
	return nil, Unsupported("HAVING " + perr.Quote(tree.AsString(e)) + " (comparisons of aggregates, grouping columns and literals, AND, OR, NOT, IS [NOT] NULL, BETWEEN are)")
}

func (s *Statement) operand(e tree.Expr) (operand, error) {
	if p, ok := e.(*tree.ParenExpr); ok {
		return s.operand(p.Expr)
	}
	switch e.(type) {
	case *tree.UnresolvedName, *tree.FuncExpr:
		i, err := s.item(e, "HAVING")
		return operand{item: i}, err
	}
	v, ok, text, err := literal(e)
	if err != nil {
		return operand{}, err
	}
	return operand{item: -1, lit: v, ok: ok, text: text}, nil
}

// literal reads a SQL literal: numbers, strings, booleans, NULL, typed
// strings (TIMESTAMP '…', DATE '…': compared with a column of that type).
func literal(e tree.Expr) (v val, ok bool, text string, err error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return literal(x.Expr)
	case *tree.NumVal:
		s := x.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return intVal(i), true, s, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatVal(f), true, s, nil
		}
	case *tree.StrVal:
		return val{k: kStr, s: x.RawString()}, true, x.RawString(), nil
	case *tree.DBool:
		if bool(*x) {
			return val{k: kBool, i: 1}, true, "true", nil
		}
		return val{k: kBool}, true, "false", nil
	case *tree.UnaryExpr:
		if x.Operator.Symbol == tree.UnaryMinus {
			v, ok, text, err := literal(x.Expr)
			if err == nil && ok {
				switch v.k {
				case kInt:
					return intVal(-v.i), true, "-" + text, nil
				case kFloat:
					return floatVal(-v.f), true, "-" + text, nil
				}
			}
		}
	case *tree.CastExpr:
		return literal(x.Expr)
	case *tree.AnnotateTypeExpr:
		return literal(x.Expr)
	}
	if e == tree.DNull {
		return val{}, false, "", nil
	}
	return val{}, false, "", Unsupported("the HAVING operand " + perr.Quote(tree.AsString(e)) + " (columns, aggregates and literals are)")
}

func (o operand) value(row []val, present []bool) (val, bool) {
	if o.item < 0 {
		return o.lit, o.ok
	}
	return row[o.item], present[o.item]
}

func (c andCond) eval(row []val, present []bool, types []arrow.DataType) (predicate.Tri, error) {
	l, err := c.l.eval(row, present, types)
	if err != nil || l == predicate.False {
		return predicate.False, err
	}
	r, err := c.r.eval(row, present, types)
	if err != nil || r == predicate.False {
		return predicate.False, err
	}
	if l == predicate.Unknown || r == predicate.Unknown {
		return predicate.Unknown, nil
	}
	return predicate.True, nil
}

func (c orCond) eval(row []val, present []bool, types []arrow.DataType) (predicate.Tri, error) {
	l, err := c.l.eval(row, present, types)
	if err != nil || l == predicate.True {
		return predicate.True, err
	}
	r, err := c.r.eval(row, present, types)
	if err != nil || r == predicate.True {
		return predicate.True, err
	}
	if l == predicate.Unknown || r == predicate.Unknown {
		return predicate.Unknown, nil
	}
	return predicate.False, nil
}

func (c notCond) eval(row []val, present []bool, types []arrow.DataType) (predicate.Tri, error) {
	t, err := c.c.eval(row, present, types)
	switch t {
	case predicate.True:
		return predicate.False, err
	case predicate.False:
		return predicate.True, err
	}
	return predicate.Unknown, err
}

func (c isNullCond) eval(row []val, present []bool, _ []arrow.DataType) (predicate.Tri, error) {
	_, ok := c.o.value(row, present)
	if ok == c.not {
		return predicate.True, nil
	}
	return predicate.False, nil
}

func (c cmpCond) eval(row []val, present []bool, types []arrow.DataType) (predicate.Tri, error) {
	l, lok := c.l.value(row, present)
	r, rok := c.r.value(row, present)
	if !lok || !rok {
		return predicate.Unknown, nil
	}
	var err error
	if c.l.item < 0 {
		l, err = typed(c.l, types[c.r.item])
	} else if c.r.item < 0 {
		r, err = typed(c.r, types[c.l.item])
	}
	if err != nil {
		return predicate.Unknown, err
	}
	if (l.k == kStr) != (r.k == kStr) || (l.k == kBool) != (r.k == kBool) {
		return predicate.Unknown, perr.New(perr.InvalidArgument, "SQL: HAVING compares values of different types")
	}
	n := compareVals(l, r)
	var t bool
	switch c.op {
	case treecmp.EQ:
		t = n == 0
	case treecmp.NE:
		t = n != 0
	case treecmp.LT:
		t = n < 0
	case treecmp.LE:
		t = n <= 0
	case treecmp.GT:
		t = n > 0
	case treecmp.GE:
		t = n >= 0
	}
	if t {
		return predicate.True, nil
	}
	return predicate.False, nil
}

// typed converts a literal compared with a column of type t: a string
// compared with a date, time or timestamp is read as one.
func typed(o operand, t arrow.DataType) (val, error) {
	if o.lit.k != kStr {
		return o.lit, nil
	}
	text := strings.Replace(o.text, " ", "T", 1)
	switch tt := t.(type) {
	case *arrow.TimestampType:
		ts, err := arrow.TimestampFromString(text, tt.Unit)
		if err != nil {
			return val{}, perr.New(perr.InvalidArgument, "SQL: HAVING: %s is not a timestamp", perr.Quote(o.text))
		}
		return intVal(int64(ts)), nil
	case *arrow.Date32Type:
		d, err := time.Parse("2006-01-02", o.text)
		if err != nil {
			return val{}, perr.New(perr.InvalidArgument, "SQL: HAVING: %s is not a date", perr.Quote(o.text))
		}
		return intVal(int64(arrow.Date32FromTime(d))), nil
	}
	return o.lit, nil
}
