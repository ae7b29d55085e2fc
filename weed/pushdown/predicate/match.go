package predicate

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	icesubstrait "github.com/apache/iceberg-go/table/substrait"
	substraitpb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"
)

// Match is an iceberg-go expression for the predicates Iceberg's
// expression language has no node for — LIKE, ILIKE and
// ARRAY_CONTAINS(list, v) — so the SQL front end can build them into one
// iceberg.BooleanExpression with the rest. It binds (iceberg.BindExpr) to
// a BoundMatch, which EncodeSubstrait writes with Substrait's standard
// functions. iceberg-go's own evaluators do not know it: a scan given one
// fails with iceberg.ErrNotImplemented (callers then scan unfiltered and
// evaluate the predicate with Eval).
type Match struct {
	Column  string
	MOp     Op // OpLike, OpILike or OpArrayContains
	Lit     iceberg.Literal
	Negated bool
}

var _ iceberg.UnboundPredicate = Match{}

// matchOperation is the iceberg.Operation a Match reports: none of
// iceberg-go's, so its visitors refuse it as not implemented.
const matchOperation = iceberg.Operation(200)

func (m Match) String() string {
	neg := ""
	if m.Negated {
		neg = "NOT "
	}
	return fmt.Sprintf("%s%s(%s, %v)", neg, m.MOp, strconv.Quote(m.Column), m.Lit)
}
func (m Match) Op() iceberg.Operation { return matchOperation }
func (m Match) Negate() iceberg.BooleanExpression {
	m.Negated = !m.Negated
	return m
}
func (m Match) Equals(o iceberg.BooleanExpression) bool {
	x, ok := o.(Match)
	return ok && x.Column == m.Column && x.MOp == m.MOp && x.Negated == m.Negated && fmt.Sprint(x.Lit) == fmt.Sprint(m.Lit)
}

// Term panics with iceberg.ErrNotImplemented: iceberg-go's visitors that
// reach a Match stop there (VisitExpr recovers it into an error).
func (m Match) Term() iceberg.UnboundTerm {
	panic(fmt.Errorf("%w: %s in an iceberg-go expression", iceberg.ErrNotImplemented, m.MOp))
}

// Bind resolves the column in s and converts the literal: a string
// pattern for LIKE/ILIKE on a string column, the element type for
// ARRAY_CONTAINS on a list.
func (m Match) Bind(s *iceberg.Schema, caseSensitive bool) (iceberg.BooleanExpression, error) {
	var f iceberg.NestedField
	var ok bool
	if caseSensitive {
		f, ok = s.FindFieldByName(m.Column)
	} else {
		f, ok = s.FindFieldByNameCaseInsensitive(m.Column)
	}
	if !ok {
		return nil, fmt.Errorf("%w: could not bind reference %s", iceberg.ErrInvalidSchema, strconv.Quote(m.Column))
	}
	path, ok := structPath(s, f.ID)
	if !ok {
		return nil, fmt.Errorf("%s: column %s is inside a list or map", m.MOp, strconv.Quote(m.Column))
	}
	want := f.Type
	switch m.MOp {
	case OpLike, OpILike:
		if _, isString := f.Type.(iceberg.StringType); !isString {
			return nil, fmt.Errorf("%s on %s: the column has type %s, not string", m.MOp, strconv.Quote(m.Column), f.Type)
		}
	case OpArrayContains:
		lt, isList := f.Type.(*iceberg.ListType)
		if !isList {
			return nil, fmt.Errorf("%s on %s: the column has type %s, not a list", m.MOp, strconv.Quote(m.Column), f.Type)
		}
		want = lt.Element
	default:
		return nil, fmt.Errorf("%s is not a Match operator", m.MOp)
	}
	if m.Lit == nil {
		return nil, fmt.Errorf("%s on %s: a NULL literal", m.MOp, strconv.Quote(m.Column))
	}
	lit, err := m.Lit.To(want)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %v", m.MOp, strconv.Quote(m.Column), err)
	}
	return BoundMatch{Match: Match{Column: m.Column, MOp: m.MOp, Lit: lit, Negated: m.Negated}, FieldID: f.ID, Path: path, Type: f.Type}, nil
}

// BoundMatch is a Match bound to a schema.
type BoundMatch struct {
	Match
	FieldID int
	Path    []int // struct positions from the root
	Type    iceberg.Type
}

var _ iceberg.BoundPredicate = BoundMatch{}

func (b BoundMatch) Negate() iceberg.BooleanExpression {
	b.Negated = !b.Negated
	return b
}
func (b BoundMatch) Equals(o iceberg.BooleanExpression) bool {
	x, ok := o.(BoundMatch)
	return ok && x.FieldID == b.FieldID && b.Match.Equals(x.Match)
}

// Ref and Term panic with iceberg.ErrNotImplemented (see Match.Term).
func (b BoundMatch) Ref() iceberg.BoundReference {
	panic(fmt.Errorf("%w: %s in an iceberg-go expression", iceberg.ErrNotImplemented, b.MOp))
}
func (b BoundMatch) Term() iceberg.BoundTerm { return b.Ref() }

// structPath is the position path of field id through structs.
func structPath(s *iceberg.Schema, id int) ([]int, bool) {
	var walk func(fields []iceberg.NestedField, prefix []int) ([]int, bool)
	walk = func(fields []iceberg.NestedField, prefix []int) ([]int, bool) {
		for i, f := range fields {
			p := append(append([]int{}, prefix...), i)
			if f.ID == id {
				return p, true
			}
			if st, ok := f.Type.(*iceberg.StructType); ok {
				if out, ok := walk(st.FieldList, p); ok {
					return out, true
				}
			}
		}
		return nil, false
	}
	return walk(s.Fields(), nil)
}

// hasMatch reports whether e holds a BoundMatch.
func hasMatch(e iceberg.BooleanExpression) bool {
	found := false
	_, _ = iceberg.VisitExpr[bool](e, matchFinder{&found})
	return found
}

type matchFinder struct{ found *bool }

func (matchFinder) VisitTrue() bool                            { return false }
func (matchFinder) VisitFalse() bool                           { return false }
func (matchFinder) VisitNot(bool) bool                         { return false }
func (matchFinder) VisitAnd(bool, bool) bool                   { return false }
func (matchFinder) VisitOr(bool, bool) bool                    { return false }
func (matchFinder) VisitUnbound(iceberg.UnboundPredicate) bool { return false }
func (m matchFinder) VisitBound(p iceberg.BoundPredicate) bool {
	if _, ok := p.(BoundMatch); ok {
		*m.found = true
	}
	return false
}

// Substrait extension URNs and the functions the encoder declares.
const (
	urnBoolean = "extension:io.substrait:functions_boolean"
	urnString  = "extension:io.substrait:functions_string"
	urnList    = "extension:io.substrait:functions_list"
	urnCompare = "extension:io.substrait:functions_comparison"
	// urnIceberg declares is_in, as iceberg-go's Substrait converter writes IN.
	urnIceberg = "extension:apache.iceberg:functions_set"
)

// subEncoder writes an expression holding BoundMatch nodes: standard
// leaves through iceberg-go's converter (their function anchors remapped
// into one table), Match nodes and AND/OR/NOT by hand.
type subEncoder struct {
	schema *iceberg.Schema
	urns   []*extensions.SimpleExtensionURN
	decls  []*extensions.SimpleExtensionDeclaration
	urnOf  map[string]uint32
	fnOf   map[[2]string]uint32
	err    error
}

func (e *subEncoder) fn(urn, name string) uint32 {
	if a, ok := e.fnOf[[2]string{urn, name}]; ok {
		return a
	}
	u, ok := e.urnOf[urn]
	if !ok {
		u = uint32(len(e.urns) + 1)
		e.urnOf[urn] = u
		e.urns = append(e.urns, &extensions.SimpleExtensionURN{ExtensionUrnAnchor: u, Urn: urn})
	}
	a := uint32(len(e.decls) + 1)
	e.fnOf[[2]string{urn, name}] = a
	e.decls = append(e.decls, &extensions.SimpleExtensionDeclaration{MappingType: &extensions.SimpleExtensionDeclaration_ExtensionFunction_{
		ExtensionFunction: &extensions.SimpleExtensionDeclaration_ExtensionFunction{ExtensionUrnReference: u, FunctionAnchor: a, Name: name}}})
	return a
}

var boolType = &substraitpb.Type{Kind: &substraitpb.Type_Bool{Bool: &substraitpb.Type_Boolean{Nullability: substraitpb.Type_NULLABILITY_NULLABLE}}}

func (e *subEncoder) call(urn, name string, opts []*substraitpb.FunctionOption, args ...*substraitpb.Expression) *substraitpb.Expression {
	f := &substraitpb.Expression_ScalarFunction{FunctionReference: e.fn(urn, name), OutputType: boolType, Options: opts}
	for _, a := range args {
		f.Arguments = append(f.Arguments, &substraitpb.FunctionArgument{ArgType: &substraitpb.FunctionArgument_Value{Value: a}})
	}
	return &substraitpb.Expression{RexType: &substraitpb.Expression_ScalarFunction_{ScalarFunction: f}}
}

func fieldRef(path []int, lambda bool) *substraitpb.Expression {
	var seg *substraitpb.Expression_ReferenceSegment
	for i := len(path) - 1; i >= 0; i-- {
		seg = &substraitpb.Expression_ReferenceSegment{ReferenceType: &substraitpb.Expression_ReferenceSegment_StructField_{
			StructField: &substraitpb.Expression_ReferenceSegment_StructField{Field: int32(path[i]), Child: seg}}}
	}
	ref := &substraitpb.Expression_FieldReference{ReferenceType: &substraitpb.Expression_FieldReference_DirectReference{DirectReference: seg}}
	if lambda {
		ref.RootType = &substraitpb.Expression_FieldReference_LambdaParameterReference_{LambdaParameterReference: &substraitpb.Expression_FieldReference_LambdaParameterReference{}}
	} else {
		ref.RootType = &substraitpb.Expression_FieldReference_RootReference_{RootReference: &substraitpb.Expression_FieldReference_RootReference{}}
	}
	return &substraitpb.Expression{RexType: &substraitpb.Expression_Selection{Selection: ref}}
}

func stringLit(s string) *substraitpb.Expression {
	return &substraitpb.Expression{RexType: &substraitpb.Expression_Literal_{Literal: &substraitpb.Expression_Literal{LiteralType: &substraitpb.Expression_Literal_String_{String_: s}}}}
}

// elementLiteral is lit of type t as Substrait writes it, and t's
// Substrait type: iceberg-go's own conversion of "f = lit" on a one-field
// schema of type t.
func elementLiteral(t iceberg.Type, lit iceberg.Literal) (*substraitpb.Expression, *substraitpb.Type, error) {
	s := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "element", Type: t})
	b, err := iceberg.BindExpr(s, iceberg.LiteralPredicate(iceberg.OpEQ, iceberg.Reference("element"), lit), true)
	if err != nil {
		return nil, nil, err
	}
	_, x, err := icesubstrait.ConvertExpr(s, b, true)
	if err != nil {
		return nil, nil, err
	}
	base, err := icesubstrait.ConvertSchema(s)
	if err != nil {
		return nil, nil, err
	}
	args := x.ToProto().GetScalarFunction().GetArguments()
	if len(args) != 2 || args[1].GetValue().GetLiteral() == nil {
		return nil, nil, fmt.Errorf("literal %v of %s has no Substrait form", lit, t)
	}
	return args[1].GetValue(), base.ToProto().GetStruct().GetTypes()[0], nil
}

// match writes LIKE/ILIKE as like(col, pattern) (ILIKE with the option
// case_sensitivity = CASE_INSENSITIVE) and ARRAY_CONTAINS(list, v) as
// any_match(list, (x) -> equal(x, v)); NOT wraps the negations.
func (e *subEncoder) match(m BoundMatch) (*substraitpb.Expression, error) {
	var out *substraitpb.Expression
	switch m.MOp {
	case OpLike, OpILike:
		pat, ok := m.Lit.(iceberg.StringLiteral)
		if !ok {
			return nil, fmt.Errorf("%s pattern is %T, not a string", m.MOp, m.Lit)
		}
		var opts []*substraitpb.FunctionOption
		if m.MOp == OpILike {
			opts = []*substraitpb.FunctionOption{{Name: "case_sensitivity", Preference: []string{"CASE_INSENSITIVE"}}}
		}
		out = e.call(urnString, "like:str_str", opts, fieldRef(m.Path, false), stringLit(string(pat)))
	case OpArrayContains:
		lt := m.Type.(*iceberg.ListType)
		lit, typ, err := elementLiteral(lt.Element, m.Lit)
		if err != nil {
			return nil, err
		}
		body := e.call(urnCompare, "equal:any_any", nil, fieldRef([]int{0}, true), lit)
		lambda := &substraitpb.Expression{RexType: &substraitpb.Expression_Lambda_{Lambda: &substraitpb.Expression_Lambda{
			Parameters: &substraitpb.Type_Struct{Types: []*substraitpb.Type{typ}, Nullability: substraitpb.Type_NULLABILITY_REQUIRED}, Body: body}}}
		out = e.call(urnList, "any_match:list_func", nil, fieldRef(m.Path, false), lambda)
	default:
		return nil, fmt.Errorf("%s is not a Match operator", m.MOp)
	}
	if m.Negated {
		out = e.call(urnBoolean, "not:bool", nil, out)
	}
	return out, nil
}

// leaf writes a standard bound predicate with iceberg-go's converter and
// moves its function anchors into e's table.
func (e *subEncoder) leaf(p iceberg.BooleanExpression) (*substraitpb.Expression, error) {
	reg, x, err := icesubstrait.ConvertExpr(e.schema, p, true)
	if err != nil {
		return nil, err
	}
	urns, decls := reg.ExtensionsToProto()
	urnByAnchor := map[uint32]string{}
	for _, u := range urns {
		urnByAnchor[u.GetExtensionUrnAnchor()] = u.GetUrn()
	}
	remap := map[uint32]uint32{}
	for _, d := range decls {
		if f := d.GetExtensionFunction(); f != nil {
			remap[f.GetFunctionAnchor()] = e.fn(urnByAnchor[f.GetExtensionUrnReference()], f.GetName())
		}
	}
	out := x.ToProto()
	remapFunctions(out, remap)
	return out, nil
}

// remapFunctions rewrites the function references of x's scalar
// functions (iceberg-go's leaves nest only scalar functions).
func remapFunctions(x *substraitpb.Expression, remap map[uint32]uint32) {
	f := x.GetScalarFunction()
	if f == nil {
		return
	}
	f.FunctionReference = remap[f.GetFunctionReference()]
	for _, a := range f.GetArguments() {
		if v := a.GetValue(); v != nil {
			remapFunctions(v, remap)
		}
	}
}

// VisitExpr callbacks: each returns the node's Substrait form (nil after
// an error, kept in e.err).
func (e *subEncoder) VisitTrue() *substraitpb.Expression  { return boolLit(true) }
func (e *subEncoder) VisitFalse() *substraitpb.Expression { return boolLit(false) }
func (e *subEncoder) VisitNot(c *substraitpb.Expression) *substraitpb.Expression {
	return e.call(urnBoolean, "not:bool", nil, c)
}
func (e *subEncoder) VisitAnd(l, r *substraitpb.Expression) *substraitpb.Expression {
	return e.call(urnBoolean, "and:bool", nil, l, r)
}
func (e *subEncoder) VisitOr(l, r *substraitpb.Expression) *substraitpb.Expression {
	return e.call(urnBoolean, "or:bool", nil, l, r)
}
func (e *subEncoder) VisitUnbound(iceberg.UnboundPredicate) *substraitpb.Expression {
	panic(fmt.Errorf("%w: only bound expressions convert to Substrait", iceberg.ErrInvalidArgument))
}
func (e *subEncoder) VisitBound(p iceberg.BoundPredicate) *substraitpb.Expression {
	var out *substraitpb.Expression
	var err error
	if m, ok := p.(BoundMatch); ok {
		out, err = e.match(m)
	} else {
		out, err = e.leaf(p)
	}
	if err != nil {
		panic(err)
	}
	return out
}

func boolLit(b bool) *substraitpb.Expression {
	return &substraitpb.Expression{RexType: &substraitpb.Expression_Literal_{Literal: &substraitpb.Expression_Literal{LiteralType: &substraitpb.Expression_Literal_Boolean{Boolean: b}}}}
}

// encodeWithMatches is EncodeSubstrait for expressions holding BoundMatch
// nodes.
func encodeWithMatches(s *iceberg.Schema, e iceberg.BooleanExpression) ([]byte, error) {
	enc := &subEncoder{schema: s, urnOf: map[string]uint32{}, fnOf: map[[2]string]uint32{}}
	x, err := iceberg.VisitExpr[*substraitpb.Expression](e, enc)
	if err != nil {
		return nil, err
	}
	base, err := icesubstrait.ConvertSchema(s)
	if err != nil {
		return nil, err
	}
	msg := &substraitpb.ExtendedExpression{
		Version:       &substraitpb.Version{MinorNumber: 75, Producer: "lakeweed"},
		ExtensionUrns: enc.urns,
		Extensions:    enc.decls,
		BaseSchema:    base.ToProto(),
		ReferredExpr: []*substraitpb.ExpressionReference{{
			ExprType:    &substraitpb.ExpressionReference_Expression{Expression: x},
			OutputNames: []string{"predicate"},
		}},
	}
	return proto.Marshal(msg)
}
