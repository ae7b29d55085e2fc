package predicate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	icesubstrait "github.com/apache/iceberg-go/table/substrait"
	"github.com/google/uuid"
	substraitgo "github.com/substrait-io/substrait-go/v8"
	"github.com/substrait-io/substrait-go/v8/expr"
	"github.com/substrait-io/substrait-go/v8/extensions"
	substraitpb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// DecodeSubstrait decodes a Substrait ExtendedExpression bound to schema s.
//
// The message is read with substrait-go (expr.ExtendedFromProto), whose
// extension registry resolves each function reference to its extension URN
// and name; functions are then matched by that identity (knownFunctions).
// A function of a known extension the planner does not interpret is a
// residual (might match); an extension substrait-go's collection does not
// know (Substrait's standard ones and Iceberg's functions_set) is refused
// naming it, as is a reference to a function nothing declares.
//
// Binding: field references are positions in the expression's base_schema,
// which must be the schema's own Substrait form (iceberg-go's
// substrait.ConvertSchema: the same field names in the same order), so a
// position names exactly one Iceberg field id. A base_schema that differs is
// refused, naming the first difference. Several referred expressions are
// ANDed. Functions the planner does not know become residuals.
//
//	bytes ─proto.Unmarshal─▶ ExtendedExpression ─checkBaseSchema─▶ substrait-go expr.Extended
//	      ─subDecoder (functions by extensions.ID)─▶ Expr (field ids, raw literals)
func DecodeSubstrait(b []byte, s *iceberg.Schema) (e Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, bindErr("malformed Substrait expression: %s", perr.Quote(fmt.Sprint(r)))
		}
	}()
	var ee substraitpb.ExtendedExpression
	if err := proto.Unmarshal(b, &ee); err != nil {
		return nil, bindErr("predicate is not a Substrait ExtendedExpression: %v", err)
	}
	if len(ee.GetReferredExpr()) == 0 {
		return nil, bindErr("Substrait ExtendedExpression has no referred expression")
	}
	if err := checkBaseSchema(ee.GetBaseSchema(), s); err != nil {
		return nil, err
	}
	ext, err := expr.ExtendedFromProto(&ee, substraitFunctions())
	if errors.Is(err, substraitgo.ErrNotFound) {
		return nil, bindErr("Substrait ExtendedExpression refers to an extension the planner does not know (it knows Substrait's standard extensions and Iceberg's functions_set): %s", perr.Quote(err.Error()))
	}
	if err != nil {
		return nil, bindErr("Substrait ExtendedExpression does not resolve: %s", perr.Quote(err.Error()))
	}
	d := &subDecoder{schema: s}
	var kids []Expr
	for i, r := range ext.ReferredExpr {
		x := r.GetExpr()
		if x == nil {
			return nil, bindErr("Substrait referred expression %d is not a scalar expression", i)
		}
		k, err := d.expr(x, 0)
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return And{Kids: kids}, nil
}

// substraitFunctions is substrait-go's collection of the standard
// extensions (loaded once, by substrait-go).
func substraitFunctions() *extensions.Collection {
	return extensions.GetDefaultCollectionWithNoError()
}

// EncodeSubstrait converts a bound iceberg-go expression on schema s into a
// serialized Substrait ExtendedExpression (the canonical wire form of
// ParquetPushdownRequest.predicate).
func EncodeSubstrait(s *iceberg.Schema, e iceberg.BooleanExpression) ([]byte, error) {
	if hasMatch(e) {
		return encodeWithMatches(s, e)
	}
	reg, ex, err := icesubstrait.ConvertExpr(s, e, true)
	if err != nil {
		return nil, err
	}
	base, err := icesubstrait.ConvertSchema(s)
	if err != nil {
		return nil, err
	}
	urns, decls := reg.ExtensionsToProto()
	msg := &substraitpb.ExtendedExpression{
		Version:       &substraitpb.Version{MinorNumber: 75, Producer: "lakeweed"},
		ExtensionUrns: urns,
		Extensions:    decls,
		BaseSchema:    base.ToProto(),
		ReferredExpr: []*substraitpb.ExpressionReference{{
			ExprType:    &substraitpb.ExpressionReference_Expression{Expression: ex.ToProto()},
			OutputNames: []string{"predicate"},
		}},
	}
	return proto.Marshal(msg)
}

func checkBaseSchema(got *substraitpb.NamedStruct, s *iceberg.Schema) error {
	if got == nil {
		return bindErr("Substrait ExtendedExpression has no base_schema; it must be schema %d's Substrait form", s.ID)
	}
	want, err := icesubstrait.ConvertSchema(s)
	if err != nil {
		return bindErr("schema %d has no Substrait form: %v", s.ID, err)
	}
	wn, gn := want.Names, got.GetNames()
	for i := 0; i < len(wn) || i < len(gn); i++ {
		switch {
		case i >= len(gn):
			return bindErr("Substrait base_schema does not match schema %d: field %s is missing", s.ID, perr.Quote(wn[i]))
		case i >= len(wn):
			return bindErr("Substrait base_schema does not match schema %d: extra field %s", s.ID, perr.Quote(gn[i]))
		case wn[i] != gn[i]:
			return bindErr("Substrait base_schema does not match schema %d: name %d is %s, want %s", s.ID, i, perr.Quote(gn[i]), perr.Quote(wn[i]))
		}
	}
	if n := len(got.GetStruct().GetTypes()); n != len(s.Fields()) {
		return bindErr("Substrait base_schema does not match schema %d: %d top-level fields, want %d", s.ID, n, len(s.Fields()))
	}
	return nil
}

type subDecoder struct {
	schema *iceberg.Schema
}

// knownFunctions are the functions the decoder interprets, by the
// identity substrait-go's registry resolves a reference to: the extension
// URN and the name without its signature. The same name in another
// extension is not ours to interpret (a residual).
var knownFunctions = func() map[[2]string]bool {
	known := map[string][]string{
		urnBoolean: {"and", "or", "not"},
		urnCompare: {"is_null", "is_not_null", "is_nan", "equal", "not_equal", "lt", "lte", "gt", "gte", "between"},
		urnString:  {"starts_with", "like", "contains", "ends_with"},
		urnList:    {"any_match"},
		urnIceberg: {"is_in"},
	}
	out := map[[2]string]bool{}
	for urn, names := range known {
		for _, n := range names {
			out[[2]string{urn, n}] = true
		}
	}
	return out
}()

// literalOf is x's literal in protobuf form (the form literal converts),
// nil when x is not a literal.
func literalOf(x expr.Expression) *substraitpb.Expression_Literal {
	if l, ok := x.(expr.Literal); ok {
		return l.ToProtoLiteral()
	}
	return nil
}

func isFieldRef(x expr.Expression) bool {
	_, ok := x.(*expr.FieldReference)
	return ok
}

func (d *subDecoder) expr(x expr.Expression, depth int) (Expr, error) {
	if depth > maxJSONDepth {
		return nil, bindErr("Substrait expression nests more than %d levels", maxJSONDepth)
	}
	switch v := x.(type) {
	case expr.Literal:
		lit := v.ToProtoLiteral()
		if _, ok := lit.GetLiteralType().(*substraitpb.Expression_Literal_Boolean); ok {
			return Const{Value: lit.GetBoolean()}, nil
		}
		if lit.GetNull() != nil {
			// NULL as a whole predicate never matches.
			return Const{Value: false}, nil
		}
		return nil, bindErr("Substrait predicate is a non-boolean literal")
	case *expr.ScalarFunction:
		return d.function(v, depth)
	case *expr.SingularOrList:
		id, ok, err := d.fieldRef(v.Value)
		if err != nil {
			return nil, err
		}
		if !ok {
			return Residual{Reason: "IN over an expression that is not a column"}, nil
		}
		l := &Leaf{FieldID: id, Op: OpIn}
		for _, o := range v.Options {
			lit := literalOf(o)
			if lit == nil {
				return Residual{Reason: "IN list with a non-literal option"}, nil
			}
			val, err := d.literal(lit, id)
			if err != nil {
				return nil, err
			}
			l.Raw = append(l.Raw, val)
		}
		return l, nil
	case *expr.FieldReference:
		id, ok, err := d.fieldRef(v)
		if err != nil {
			return nil, err
		}
		if ok {
			// A boolean column as a predicate: col = true.
			return &Leaf{FieldID: id, Op: OpEq, Raw: []iceberg.Literal{iceberg.BoolLiteral(true)}}, nil
		}
	}
	return Residual{Reason: "Substrait expression kind not used for pruning"}, nil
}

// args are f's arguments, each a value (an enum argument is refused).
func (d *subDecoder) args(f *expr.ScalarFunction, name string) ([]expr.Expression, error) {
	out := make([]expr.Expression, f.NArgs())
	for i := range out {
		a, ok := f.Arg(i).(expr.Expression)
		if !ok || a == nil {
			return nil, bindErr("Substrait function %s: argument %d is not a value", name, i)
		}
		out[i] = a
	}
	return out, nil
}

var flipped = map[Op]Op{OpLt: OpGt, OpLtEq: OpGtEq, OpGt: OpLt, OpGtEq: OpLtEq, OpEq: OpEq}

// functionName is f's name without its signature when it is one of
// knownFunctions, else "".
func functionName(f *expr.ScalarFunction) string {
	name := f.Name()
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if !knownFunctions[[2]string{f.ID().URN, name}] {
		return ""
	}
	return name
}

func (d *subDecoder) function(f *expr.ScalarFunction, depth int) (Expr, error) {
	name := functionName(f)
	if name == "" {
		return Residual{Reason: "Substrait function " + perr.Quote(f.ID().Name) + " of extension " + perr.Quote(f.ID().URN)}, nil
	}
	args, err := d.args(f, name)
	if err != nil {
		return nil, err
	}
	switch name {
	case "and", "or":
		kids := make([]Expr, 0, len(args))
		for _, a := range args {
			k, err := d.expr(a, depth+1)
			if err != nil {
				return nil, err
			}
			kids = append(kids, k)
		}
		if name == "and" {
			return And{Kids: kids}, nil
		}
		return Or{Kids: kids}, nil
	case "not":
		if len(args) != 1 {
			return nil, bindErr("Substrait not takes one argument, got %d", len(args))
		}
		k, err := d.expr(args[0], depth+1)
		if err != nil {
			return nil, err
		}
		return Not{Kid: k}, nil
	case "is_null", "is_not_null", "is_nan":
		if len(args) != 1 {
			return nil, bindErr("Substrait %s takes one argument, got %d", name, len(args))
		}
		id, ok, err := d.fieldRef(args[0])
		if err != nil || !ok {
			return residualOr(name+" over an expression that is not a column", err)
		}
		op := OpIsNull
		if name == "is_nan" {
			op = OpIsNaN
		}
		return &Leaf{FieldID: id, Op: op, Negated: name == "is_not_null"}, nil
	case "equal", "not_equal", "lt", "lte", "gt", "gte", "starts_with":
		if len(args) != 2 {
			return nil, bindErr("Substrait %s takes two arguments, got %d", name, len(args))
		}
		op := map[string]Op{"equal": OpEq, "not_equal": OpEq, "lt": OpLt, "lte": OpLtEq, "gt": OpGt, "gte": OpGtEq, "starts_with": OpStartsWith}[name]
		col, lit := args[0], args[1]
		if literalOf(col) != nil && isFieldRef(lit) {
			if name == "starts_with" {
				return Residual{Reason: "starts_with with the column as the prefix"}, nil
			}
			col, lit, op = lit, col, flipped[op]
		}
		id, ok, err := d.fieldRef(col)
		if err != nil || !ok {
			return residualOr(name+" over an expression that is not a column", err)
		}
		l := literalOf(lit)
		if l == nil {
			return Residual{Reason: name + " between two non-literal expressions"}, nil
		}
		if l.GetNull() != nil {
			// Comparing with NULL is never TRUE.
			return Const{Value: false}, nil
		}
		v, err := d.literal(l, id)
		if err != nil {
			return nil, err
		}
		return &Leaf{FieldID: id, Op: op, Negated: name == "not_equal", Raw: []iceberg.Literal{v}}, nil
	case "is_in":
		if len(args) != 2 {
			return nil, bindErr("Substrait is_in takes two arguments, got %d", len(args))
		}
		id, ok, err := d.fieldRef(args[0])
		if err != nil || !ok {
			return residualOr("is_in over an expression that is not a column", err)
		}
		list := literalOf(args[1]).GetList()
		if list == nil {
			return Residual{Reason: "is_in without a literal list"}, nil
		}
		l := &Leaf{FieldID: id, Op: OpIn}
		for _, x := range list.GetValues() {
			v, err := d.literal(x, id)
			if err != nil {
				return nil, err
			}
			l.Raw = append(l.Raw, v)
		}
		return l, nil
	case "like", "contains", "ends_with":
		return d.like(name, f, args)
	case "any_match":
		return d.anyMatch(args)
	case "between":
		if len(args) != 3 {
			return nil, bindErr("Substrait between takes three arguments, got %d", len(args))
		}
		id, ok, err := d.fieldRef(args[0])
		lo, hi := literalOf(args[1]), literalOf(args[2])
		if err != nil || !ok || lo == nil || hi == nil {
			return residualOr("between over non-literal bounds", err)
		}
		lov, err := d.literal(lo, id)
		if err != nil {
			return nil, err
		}
		hiv, err := d.literal(hi, id)
		if err != nil {
			return nil, err
		}
		return And{Kids: []Expr{
			&Leaf{FieldID: id, Op: OpGtEq, Raw: []iceberg.Literal{lov}},
			&Leaf{FieldID: id, Op: OpLtEq, Raw: []iceberg.Literal{hiv}},
		}}, nil
	}
	return Residual{Reason: "Substrait function " + name}, nil
}

// fieldRef resolves a direct field reference from the root to a field id.
// ok is false for expressions that are not plain column references.
func (d *subDecoder) fieldRef(x expr.Expression) (id int, ok bool, err error) {
	if x == nil {
		return 0, false, bindErr("Substrait argument is missing")
	}
	ref, isRef := x.(*expr.FieldReference)
	if !isRef || ref.Root != expr.RootReference {
		// A cast of a column compares converted values, an outer or
		// lambda reference is no column: not prunable here.
		return 0, false, nil
	}
	seg, _ := ref.Reference.(expr.ReferenceSegment)
	fields := d.schema.Fields()
	var f iceberg.NestedField
	for depth := 0; ; depth++ {
		sf, isStruct := seg.(*expr.StructFieldRef)
		if !isStruct || sf == nil {
			return 0, false, nil
		}
		pos := int(sf.Field)
		if pos < 0 || pos >= len(fields) {
			return 0, false, bindErr("Substrait field reference %d is out of range (the struct has %d fields)", pos, len(fields))
		}
		f = fields[pos]
		if sf.Child == nil {
			return f.ID, true, nil
		}
		st, isStruct := f.Type.(*iceberg.StructType)
		if !isStruct {
			return 0, false, bindErr("Substrait field reference descends into %s, which is not a struct", perr.Quote(f.Name))
		}
		fields, seg = st.FieldList, sf.Child
		if depth > 256 {
			return 0, false, bindErr("Substrait field reference is too deep")
		}
	}
}

// literal converts a Substrait literal to an Iceberg literal; Bind checks it
// against the field's type.
func (d *subDecoder) literal(l *substraitpb.Expression_Literal, fieldID int) (iceberg.Literal, error) {
	f, _ := d.schema.FindFieldByID(fieldID)
	switch v := l.GetLiteralType().(type) {
	case *substraitpb.Expression_Literal_Boolean:
		return iceberg.BoolLiteral(v.Boolean), nil
	case *substraitpb.Expression_Literal_I8:
		return iceberg.Int32Literal(v.I8), nil
	case *substraitpb.Expression_Literal_I16:
		return iceberg.Int32Literal(v.I16), nil
	case *substraitpb.Expression_Literal_I32:
		return iceberg.Int32Literal(v.I32), nil
	case *substraitpb.Expression_Literal_I64:
		return iceberg.Int64Literal(v.I64), nil
	case *substraitpb.Expression_Literal_Fp32:
		return iceberg.Float32Literal(v.Fp32), nil
	case *substraitpb.Expression_Literal_Fp64:
		return iceberg.Float64Literal(v.Fp64), nil
	case *substraitpb.Expression_Literal_String_:
		return iceberg.StringLiteral(v.String_), nil
	case *substraitpb.Expression_Literal_VarChar_:
		return iceberg.StringLiteral(v.VarChar.GetValue()), nil
	case *substraitpb.Expression_Literal_FixedChar:
		return iceberg.StringLiteral(v.FixedChar), nil
	case *substraitpb.Expression_Literal_Binary:
		return iceberg.BinaryLiteral(v.Binary), nil
	case *substraitpb.Expression_Literal_FixedBinary:
		return iceberg.FixedLiteral(v.FixedBinary), nil
	case *substraitpb.Expression_Literal_Uuid:
		u, err := uuid.FromBytes(v.Uuid)
		if err != nil {
			return nil, bindErr("Substrait uuid literal: %v", err)
		}
		if _, isFixed := f.Type.(iceberg.UUIDType); !isFixed {
			return iceberg.FixedLiteral(v.Uuid), nil
		}
		return iceberg.UUIDLiteral(u), nil
	case *substraitpb.Expression_Literal_Date:
		return iceberg.DateLiteral(v.Date), nil
	case *substraitpb.Expression_Literal_Time:
		return iceberg.TimeLiteral(v.Time), nil
	case *substraitpb.Expression_Literal_Timestamp:
		return iceberg.TimestampLiteral(v.Timestamp), nil
	case *substraitpb.Expression_Literal_TimestampTz:
		return iceberg.TimestampLiteral(v.TimestampTz), nil
	case *substraitpb.Expression_Literal_PrecisionTimestamp_:
		return precisionTimestamp(v.PrecisionTimestamp.GetPrecision(), v.PrecisionTimestamp.GetValue())
	case *substraitpb.Expression_Literal_PrecisionTimestampTz:
		return precisionTimestamp(v.PrecisionTimestampTz.GetPrecision(), v.PrecisionTimestampTz.GetValue())
	case *substraitpb.Expression_Literal_Decimal_:
		b := v.Decimal.GetValue()
		if len(b) != 16 {
			return nil, bindErr("Substrait decimal literal has %d bytes, want 16", len(b))
		}
		lo := binary.LittleEndian.Uint64(b[:8])
		hi := int64(binary.LittleEndian.Uint64(b[8:]))
		n := decimal128.New(hi, lo)
		scale := v.Decimal.GetScale()
		if scale < 0 || scale > 38 {
			return nil, bindErr("Substrait decimal literal has scale %d", scale)
		}
		return iceberg.DecimalLiteral(iceberg.Decimal{Val: n, Scale: int(scale)}), nil
	case *substraitpb.Expression_Literal_Null:
		return nil, bindErr("NULL literal compared with field %d; use IS NULL", fieldID)
	}
	return nil, bindErr("Substrait literal %T is not supported for field %d", l.GetLiteralType(), fieldID)
}

func precisionTimestamp(precision int32, v int64) (iceberg.Literal, error) {
	switch precision {
	case 6:
		return iceberg.TimestampLiteral(v), nil
	case 9:
		return iceberg.TimestampNsLiteral(v), nil
	case 0, 3:
		mul := map[int32]int64{0: 1_000_000, 3: 1000}[precision]
		x := new(big.Int).Mul(big.NewInt(v), big.NewInt(mul))
		if !x.IsInt64() {
			return nil, bindErr("Substrait timestamp literal overflows microseconds")
		}
		return iceberg.TimestampLiteral(x.Int64()), nil
	}
	return nil, bindErr("Substrait timestamp precision %d is not supported", precision)
}

// like decodes like(col, pattern) (case_sensitivity CASE_INSENSITIVE:
// ILIKE), contains(col, s) (LIKE '%s%') and ends_with(col, s) (LIKE
// '%s'), s's wildcards escaped.
func (d *subDecoder) like(name string, f *expr.ScalarFunction, args []expr.Expression) (Expr, error) {
	if len(args) != 2 {
		return nil, bindErr("Substrait %s takes two arguments, got %d", name, len(args))
	}
	id, ok, err := d.fieldRef(args[0])
	if err != nil || !ok {
		return residualOr(name+" over an expression that is not a column", err)
	}
	lit := literalOf(args[1])
	if lit == nil {
		return Residual{Reason: name + " with a pattern that is not a literal"}, nil
	}
	if lit.GetNull() != nil {
		return Const{Value: false}, nil
	}
	v, err := d.literal(lit, id)
	if err != nil {
		return nil, err
	}
	str, isString := v.(iceberg.StringLiteral)
	if !isString {
		return nil, bindErr("Substrait %s: the pattern is %T, not a string", name, v)
	}
	op := OpLike
	for _, o := range f.GetOptions() {
		if !strings.EqualFold(o.GetName(), "case_sensitivity") || len(o.GetPreference()) == 0 {
			continue
		}
		switch strings.ToUpper(o.GetPreference()[0]) {
		case "CASE_SENSITIVE":
		case "CASE_INSENSITIVE":
			op = OpILike
		default:
			return Residual{Reason: name + " with case_sensitivity " + perr.Quote(o.GetPreference()[0])}, nil
		}
	}
	pat := string(str)
	switch name {
	case "contains":
		pat = "%" + EscapeLike(pat) + "%"
	case "ends_with":
		pat = "%" + EscapeLike(pat)
	}
	return &Leaf{FieldID: id, Op: op, Raw: []iceberg.Literal{iceberg.StringLiteral(pat)}}, nil
}

// EscapeLike escapes LIKE's wildcards and escape character in s.
func EscapeLike(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '%' || r == '_' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// anyMatch decodes any_match(list, (x) -> equal(x, v)) as
// ARRAY_CONTAINS(list, v); any other lambda is a residual.
func (d *subDecoder) anyMatch(args []expr.Expression) (Expr, error) {
	if len(args) != 2 {
		return nil, bindErr("Substrait any_match takes two arguments, got %d", len(args))
	}
	id, ok, err := d.fieldRef(args[0])
	if err != nil || !ok {
		return residualOr("any_match over an expression that is not a column", err)
	}
	other := Residual{Reason: "any_match with a lambda other than x = literal"}
	lam, isLambda := args[1].(*expr.Lambda)
	if !isLambda || lam.Parameters == nil || len(lam.Parameters.Types) != 1 {
		return other, nil
	}
	body, isFunc := lam.Body.(*expr.ScalarFunction)
	if !isFunc || functionName(body) != "equal" || body.NArgs() != 2 {
		return other, nil
	}
	bargs, err := d.args(body, "equal")
	if err != nil {
		return nil, err
	}
	param, lit := bargs[0], bargs[1]
	if literalOf(param) != nil {
		param, lit = lit, param
	}
	ref, isRef := param.(*expr.FieldReference)
	if !isRef {
		return other, nil
	}
	root, isParam := ref.Root.(expr.LambdaParameterReference)
	seg, isStruct := ref.Reference.(*expr.StructFieldRef)
	l := literalOf(lit)
	if !isParam || root.StepsOut != 0 || !isStruct || seg.Field != 0 || seg.Child != nil || l == nil {
		return other, nil
	}
	if l.GetNull() != nil {
		return Const{Value: false}, nil
	}
	elemID := id
	if f, ok := d.schema.FindFieldByID(id); ok {
		if lt, ok := f.Type.(*iceberg.ListType); ok {
			elemID = lt.ElementID
		}
	}
	v, err := d.literal(l, elemID)
	if err != nil {
		return nil, err
	}
	return &Leaf{FieldID: id, Op: OpArrayContains, Raw: []iceberg.Literal{v}}, nil
}
