package predicate

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icesubstrait "github.com/apache/iceberg-go/table/substrait"
	substraitpb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"
)

// handWritten is an ExtendedExpression on fuzzSchema calling function
// name of extension urn on id and the literal 5, declared under anchor 1
// (called as anchor call).
func handWritten(t *testing.T, urn, name string, call uint32) []byte {
	t.Helper()
	base, err := icesubstrait.ConvertSchema(fuzzSchema())
	if err != nil {
		t.Fatal(err)
	}
	lit := &substraitpb.Expression{RexType: &substraitpb.Expression_Literal_{Literal: &substraitpb.Expression_Literal{LiteralType: &substraitpb.Expression_Literal_I64{I64: 5}}}}
	f := &substraitpb.Expression_ScalarFunction{FunctionReference: call, OutputType: boolType, Arguments: []*substraitpb.FunctionArgument{
		{ArgType: &substraitpb.FunctionArgument_Value{Value: fieldRef([]int{0}, false)}},
		{ArgType: &substraitpb.FunctionArgument_Value{Value: lit}},
	}}
	msg := &substraitpb.ExtendedExpression{
		ExtensionUrns: []*extensions.SimpleExtensionURN{{ExtensionUrnAnchor: 1, Urn: urn}},
		Extensions: []*extensions.SimpleExtensionDeclaration{{MappingType: &extensions.SimpleExtensionDeclaration_ExtensionFunction_{
			ExtensionFunction: &extensions.SimpleExtensionDeclaration_ExtensionFunction{ExtensionUrnReference: 1, FunctionAnchor: 1, Name: name}}}},
		BaseSchema: base.ToProto(),
		ReferredExpr: []*substraitpb.ExpressionReference{{
			ExprType: &substraitpb.ExpressionReference_Expression{Expression: &substraitpb.Expression{RexType: &substraitpb.Expression_ScalarFunction_{ScalarFunction: f}}}}},
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Functions are matched by the identity substrait-go's registry resolves:
// the standard comparison extension's equal is id = 5; a function of that
// extension the planner does not interpret is a residual (might match); an
// extension no collection knows and a call to an anchor nothing declares
// are refused, the unknown extension named.
func TestSubstraitFunctionsAreMatchedByTheirExtensionAndName(t *testing.T) {
	s := fuzzSchema()
	e, err := DecodeSubstrait(handWritten(t, urnCompare, "equal:any_any", 1), s)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := e.(*Leaf); !ok || l.FieldID != 1 || l.Op != OpEq || l.Negated || len(l.Raw) != 1 || l.Raw[0] != iceberg.Int64Literal(5) {
		t.Fatalf("standard equal decoded as %v", e)
	}
	e, err = DecodeSubstrait(handWritten(t, urnCompare, "roughly_equal:any_any", 1), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(Residual); !ok {
		t.Fatalf("an uninterpreted function decoded as %v, want a residual", e)
	}
	var be *BindError
	_, err = DecodeSubstrait(handWritten(t, "extension:example.com:mine", "equal:any_any", 1), s)
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "extension:example.com:mine") {
		t.Fatalf("an unknown extension: %v, want a BindError naming it", err)
	}
	_, err = DecodeSubstrait(handWritten(t, urnCompare, "equal:any_any", 7), s)
	if !errors.As(err, &be) {
		t.Fatalf("a call to an undeclared function anchor: %v, want a BindError", err)
	}
}
