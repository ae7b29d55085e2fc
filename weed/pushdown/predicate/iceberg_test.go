package predicate

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

func roundTripSchema() *iceberg.Schema {
	return iceberg.NewSchema(3,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.DecimalTypeOf(12, 3)},
		iceberg.NestedField{ID: 6, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "inner", Type: iceberg.PrimitiveTypes.Int32}}}},
		iceberg.NestedField{ID: 8, Name: "tags", Type: &iceberg.ListType{ElementID: 9, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 10, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 11, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 12, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 13, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 14, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 15, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 16, Name: "t", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 17, Name: "nums", Type: &iceberg.ListType{ElementID: 18, Element: iceberg.PrimitiveTypes.Int64}},
	)
}

// randomLeaf is a predicate on one column of roundTripSchema, its literal
// of the column's type (NaN now and then for the floats).
func randomLeaf(r *rand.Rand) iceberg.BooleanExpression {
	pick := func(n int) int { return r.IntN(n) }
	cmp := func(ref iceberg.UnboundTerm, lit iceberg.Literal) iceberg.BooleanExpression {
		ops := []iceberg.Operation{iceberg.OpEQ, iceberg.OpNEQ, iceberg.OpLT, iceberg.OpLTEQ, iceberg.OpGT, iceberg.OpGTEQ}
		return iceberg.LiteralPredicate(ops[pick(len(ops))], ref, lit)
	}
	set := func(ref iceberg.UnboundTerm, lits ...iceberg.Literal) iceberg.BooleanExpression {
		if pick(2) == 0 {
			return iceberg.SetPredicate(iceberg.OpNotIn, ref, lits)
		}
		return iceberg.SetPredicate(iceberg.OpIn, ref, lits)
	}
	unary := func(ref iceberg.UnboundTerm, nan bool) iceberg.BooleanExpression {
		ops := []iceberg.Operation{iceberg.OpIsNull, iceberg.OpNotNull}
		if nan {
			ops = append(ops, iceberg.OpIsNan, iceberg.OpNotNan)
		}
		return iceberg.UnaryPredicate(ops[pick(len(ops))], ref)
	}
	float := func() float64 {
		if pick(8) == 0 {
			return math.NaN()
		}
		return float64(pick(200)-100) / 4
	}
	switch pick(15) {
	case 0:
		ref := iceberg.Reference("id")
		switch pick(3) {
		case 0:
			return set(ref, iceberg.Int64Literal(int64(pick(9))), iceberg.Int64Literal(int64(pick(9))), iceberg.Int64Literal(-1))
		case 1:
			return unary(ref, false)
		}
		return cmp(ref, iceberg.Int64Literal(int64(pick(1000)-500)))
	case 1:
		ref := iceberg.Reference("name")
		words := []string{"", "a", "ab", "abc", "b%", `x\_y`, "ünï"}
		w := words[pick(len(words))]
		switch pick(6) {
		case 0:
			return iceberg.StartsWith(ref, w)
		case 1:
			return iceberg.NotStartsWith(ref, w)
		case 2:
			return Match{Column: "name", MOp: []Op{OpLike, OpILike}[pick(2)], Lit: iceberg.StringLiteral("%" + w + "_"), Negated: pick(2) == 0}
		case 3:
			return set(ref, iceberg.StringLiteral(w), iceberg.StringLiteral("zz"))
		case 4:
			return unary(ref, false)
		}
		return cmp(ref, iceberg.StringLiteral(w))
	case 2:
		if pick(3) == 0 {
			return unary(iceberg.Reference("score"), true)
		}
		return cmp(iceberg.Reference("score"), iceberg.Float64Literal(float()))
	case 3:
		return cmp(iceberg.Reference("day"), iceberg.DateLiteral(iceberg.Date(20000+pick(100))))
	case 4:
		d := iceberg.Decimal{Val: decimal128.FromI64(int64(pick(100000) - 50000)), Scale: 3}
		if pick(2) == 0 {
			return set(iceberg.Reference("amount"), iceberg.DecimalLiteral(d))
		}
		return cmp(iceberg.Reference("amount"), iceberg.DecimalLiteral(d))
	case 5:
		return cmp(iceberg.Reference("s.inner"), iceberg.Int32Literal(int32(pick(50))))
	case 6:
		return Match{Column: "tags", MOp: OpArrayContains, Lit: iceberg.StringLiteral([]string{"red", "blue"}[pick(2)]), Negated: pick(2) == 0}
	case 7:
		return cmp(iceberg.Reference("ts"), iceberg.TimestampLiteral(iceberg.Timestamp(int64(pick(1<<30))*1000)))
	case 8:
		return cmp(iceberg.Reference("tstz"), iceberg.TimestampLiteral(iceberg.Timestamp(int64(pick(1<<30))*1000)))
	case 9:
		if pick(2) == 0 {
			return unary(iceberg.Reference("ok"), false)
		}
		return iceberg.EqualTo(iceberg.Reference("ok"), pick(2) == 0)
	case 10:
		var u uuid.UUID
		u[15] = byte(pick(4))
		return cmp(iceberg.Reference("u"), iceberg.UUIDLiteral(u))
	case 11:
		return cmp(iceberg.Reference("blob"), iceberg.BinaryLiteral([]byte{byte(pick(4)), 0xff}))
	case 12:
		if pick(3) == 0 {
			return unary(iceberg.Reference("f"), true)
		}
		return cmp(iceberg.Reference("f"), iceberg.Float32Literal(float32(float())))
	case 13:
		return cmp(iceberg.Reference("t"), iceberg.TimeLiteral(iceberg.Time(int64(pick(86400))*1_000_000)))
	}
	return Match{Column: "nums", MOp: OpArrayContains, Lit: iceberg.Int64Literal(int64(pick(5))), Negated: pick(2) == 0}
}

func randomIcebergExpr(r *rand.Rand, depth int) iceberg.BooleanExpression {
	if depth == 0 || r.IntN(3) == 0 {
		return randomLeaf(r)
	}
	switch r.IntN(4) {
	case 0:
		return iceberg.NewNot(randomIcebergExpr(r, depth-1))
	case 1:
		return iceberg.NewOr(randomIcebergExpr(r, depth-1), randomIcebergExpr(r, depth-1))
	}
	return iceberg.NewAnd(randomIcebergExpr(r, depth-1), randomIcebergExpr(r, depth-1))
}

// canonical prints a bound Expr with each IN list sorted (a set's order
// is iceberg-go's map order, on either path).
func canonical(e Expr) string {
	switch x := e.(type) {
	case And:
		return "AND(" + canonicalAll(x.Kids) + ")"
	case Or:
		return "OR(" + canonicalAll(x.Kids) + ")"
	case *Leaf:
		c := *x
		c.Lits = slices.Clone(x.Lits)
		slices.SortFunc(c.Lits, func(a, b value.Value) int { return strings.Compare(a.String(), b.String()) })
		return c.String() + "<" + c.Type.String() + ">"
	}
	return e.String()
}

func canonicalAll(kids []Expr) string {
	parts := make([]string, len(kids))
	for i, k := range kids {
		parts[i] = canonical(k)
	}
	return strings.Join(parts, "; ")
}

// The connector's residual comes from the bound iceberg-go expression
// directly (FromBound) while the catalog decodes the Substrait bytes it is
// sent: for random predicates over every comparable type — NOT, AND, OR,
// IN and NOT IN, NaN literals, LIKE, ILIKE, ARRAY_CONTAINS, struct fields —
// both paths bind to the same predicate, so what the connector evaluates
// is what the catalog planned with.
func TestABoundExpressionConvertsAsItsSubstraitRoundTripDecodes(t *testing.T) {
	s := roundTripSchema()
	r := rand.New(rand.NewPCG(27, 2026))
	checked := 0
	for i := 0; i < 3000; i++ {
		e := randomIcebergExpr(r, 3)
		bound, err := iceberg.BindExpr(s, e, true)
		if err != nil {
			t.Fatalf("%v does not bind: %v", e, err)
		}
		wire, err := EncodeSubstrait(s, bound)
		if err != nil {
			t.Fatalf("%v does not encode: %v", bound, err)
		}
		viaWire, err := DecodeSubstrait(wire, s)
		if err != nil {
			t.Fatalf("%v does not decode: %v", bound, err)
		}
		direct, err := FromBound(bound)
		if err != nil {
			t.Fatalf("%v does not convert: %v", bound, err)
		}
		want, werr := Bind(viaWire, s, DefaultLimits)
		got, gerr := Bind(direct, s, DefaultLimits)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%v: binding the Substrait path gives %v, the direct path %v", bound, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if w, g := canonical(want), canonical(got); w != g {
			t.Fatalf("%v:\nvia Substrait %s\ndirect        %s", bound, w, g)
		}
		checked++
	}
	if checked < 2500 {
		t.Fatalf("only %d of 3000 predicates compared", checked)
	}
}

// An unbound expression is refused, not converted by name.
func TestFromBoundRefusesAnUnboundExpression(t *testing.T) {
	if _, err := FromBound(iceberg.EqualTo(iceberg.Reference("id"), int64(1))); err == nil {
		t.Fatal("an unbound predicate converted")
	}
}
