package predicate

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// FromBound converts an expression iceberg-go bound (iceberg.BindExpr, with
// this package's BoundMatch for LIKE, ILIKE and ARRAY_CONTAINS) into an
// unbound Expr — field ids and raw literals, as the wire decoders return —
// without a trip through Substrait: the connector builds its residual from
// it in the process that holds the expression, and sends EncodeSubstrait's
// bytes to the catalog, which decodes them to the same Expr (the test
// TestABoundExpressionConvertsAsItsSubstraitRoundTripDecodes holds the two
// paths equal after Bind).
//
//	iceberg.BindExpr ─▶ bound iceberg-go expression ─FromBound─▶ Expr ─Bind(schema)─▶ residual
//	                                               └─EncodeSubstrait─▶ request bytes ─▶ catalog
//
// Terms that are not plain column references (transforms) become
// residuals, as DecodeSubstrait makes of what it cannot prune with.
func FromBound(e iceberg.BooleanExpression) (Expr, error) {
	out, err := iceberg.VisitExpr(e, fromBound{})
	if err != nil {
		return nil, fmt.Errorf("convert the predicate: %w", err)
	}
	return out, nil
}

// fromBound is the iceberg-go visitor behind FromBound.
type fromBound struct{}

func (fromBound) VisitTrue() Expr  { return Const{Value: true} }
func (fromBound) VisitFalse() Expr { return Const{Value: false} }
func (fromBound) VisitNot(k Expr) Expr {
	return Not{Kid: k}
}
func (fromBound) VisitAnd(l, r Expr) Expr { return And{Kids: []Expr{l, r}} }
func (fromBound) VisitOr(l, r Expr) Expr  { return Or{Kids: []Expr{l, r}} }

func (fromBound) VisitUnbound(p iceberg.UnboundPredicate) Expr {
	panic(fmt.Errorf("%w: an unbound predicate (%s) where a bound one is expected", iceberg.ErrInvalidArgument, p))
}

func (fromBound) VisitBound(p iceberg.BoundPredicate) Expr {
	if m, ok := p.(BoundMatch); ok {
		return &Leaf{FieldID: m.FieldID, Op: m.MOp, Negated: m.Negated, Raw: []iceberg.Literal{m.Lit}}
	}
	ref, ok := p.Term().(iceberg.BoundReference)
	if !ok {
		return Residual{Reason: fmt.Sprintf("%s over an expression that is not a column", p.Op())}
	}
	id := ref.Field().ID
	switch x := p.(type) {
	case iceberg.BoundUnaryPredicate:
		switch x.Op() {
		case iceberg.OpIsNull:
			return &Leaf{FieldID: id, Op: OpIsNull}
		case iceberg.OpNotNull:
			return &Leaf{FieldID: id, Op: OpIsNull, Negated: true}
		case iceberg.OpIsNan:
			return &Leaf{FieldID: id, Op: OpIsNaN}
		case iceberg.OpNotNan:
			return &Leaf{FieldID: id, Op: OpIsNaN, Negated: true}
		}
	case iceberg.BoundLiteralPredicate:
		lit := []iceberg.Literal{x.Literal()}
		switch x.Op() {
		case iceberg.OpEQ:
			return &Leaf{FieldID: id, Op: OpEq, Raw: lit}
		case iceberg.OpNEQ:
			return &Leaf{FieldID: id, Op: OpEq, Negated: true, Raw: lit}
		case iceberg.OpLT:
			return &Leaf{FieldID: id, Op: OpLt, Raw: lit}
		case iceberg.OpLTEQ:
			return &Leaf{FieldID: id, Op: OpLtEq, Raw: lit}
		case iceberg.OpGT:
			return &Leaf{FieldID: id, Op: OpGt, Raw: lit}
		case iceberg.OpGTEQ:
			return &Leaf{FieldID: id, Op: OpGtEq, Raw: lit}
		case iceberg.OpStartsWith:
			return &Leaf{FieldID: id, Op: OpStartsWith, Raw: lit}
		case iceberg.OpNotStartsWith:
			return &Leaf{FieldID: id, Op: OpStartsWith, Negated: true, Raw: lit}
		}
	case iceberg.BoundSetPredicate:
		l := &Leaf{FieldID: id, Op: OpIn, Negated: x.Op() == iceberg.OpNotIn}
		if x.Op() != iceberg.OpIn && x.Op() != iceberg.OpNotIn {
			break
		}
		l.Raw = append(l.Raw, x.Literals().Members()...)
		return l
	}
	return Residual{Reason: fmt.Sprintf("predicate %s", p.Op())}
}
