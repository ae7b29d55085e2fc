// Package sqlpred turns a SQL WHERE clause into an Iceberg expression bound
// to a table schema, on the client, with the CockroachDB SQL parser upstream
// SeaweedFS already depends on:
//
//	"tenant_id = 'a' AND ts >= TIMESTAMP '2026-01-02'"
//	   │ parser.ParseExpr (ParseClause), or a SELECT's parse (ClauseOf): once
//	   ▼
//	Clause (CockroachDB AST) ──convert──▶ iceberg.BooleanExpression (names)
//	   │ iceberg.BindExpr(schema)   (names → field ids, literal types)
//	   ▼
//	bound expression ──predicate.EncodeSubstrait──▶ request bytes
//
// Supported: = != <> < <= > >= [NOT] IN (...) [NOT] BETWEEN, IS [NOT] NULL,
// isnan(col), [NOT] LIKE / ILIKE 'pattern' (% and _, \ escapes),
// starts_with(col, 'p'), array_contains(list, v), v = ANY(list), AND, OR,
// NOT, parentheses; literals: numbers, strings, TRUE/FALSE, and typed strings
// (DATE '…', TIMESTAMP '…', TIMESTAMPTZ '…', TIME '…', UUID '…', DECIMAL '…').
package sqlpred

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/parser"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree/treecmp"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Supported is the one-line summary shown with errors.
const Supported = "supported: = != < <= > >= [NOT] IN (...), [NOT] BETWEEN, IS [NOT] NULL, isnan(col), [NOT] LIKE / ILIKE 'pattern', starts_with(col, 'p'), array_contains(list, v), v = ANY(list), AND, OR, NOT"

// Parse converts a WHERE clause to an unbound Iceberg expression.
func Parse(where string) (iceberg.BooleanExpression, error) {
	c, err := ParseClause(where)
	if err != nil {
		return nil, err
	}
	return converter{}.clause(c)
}

// Clause is a WHERE clause parsed once: its syntax tree, converted to an
// Iceberg expression for each schema it meets (For, Bind) without being
// parsed again. A nil *Clause, or one of an empty text, is every row.
//
//	"status = 'error'" ─ParseClause─▶ Clause ─For(schema)──▶ names spelled as the schema does
//	SELECT's parse ─ClauseOf(ast)──▶ Clause ─Bind(schema)─▶ bound to field ids
type Clause struct {
	// Text is the clause as SQL (the key predicates are cached under, and
	// what plans and errors show).
	Text string
	expr tree.Expr
}

// ParseClause parses a WHERE clause (without the WHERE).
func ParseClause(where string) (*Clause, error) {
	if strings.TrimSpace(where) == "" {
		return &Clause{}, nil
	}
	if err := RefuseNUL(where); err != nil {
		return nil, fmt.Errorf("WHERE clause: %w", err)
	}
	ast, err := parser.ParseExpr(where)
	if err != nil {
		return nil, fmt.Errorf("WHERE clause: %s", ParserMessage(err))
	}
	return &Clause{Text: where, expr: ast}, nil
}

// ClauseOf is the clause of a WHERE already parsed with a statement (nil:
// every row).
func ClauseOf(e tree.Expr) *Clause {
	if e == nil {
		return &Clause{}
	}
	return &Clause{Text: tree.AsString(e), expr: e}
}

// Empty reports whether the clause keeps every row (no WHERE).
func (c *Clause) Empty() bool { return c == nil || c.expr == nil }

// For is the clause as an unbound Iceberg expression with every column
// name spelled as schema spells it (see ParseFor).
func (c *Clause) For(schema *iceberg.Schema) (iceberg.BooleanExpression, error) {
	return converter{schema: schema, resolve: func(name string) (string, error) { return ResolveName(schema, name) }}.clause(c)
}

// Bind is the clause bound to schema: unbound as For returns it, and
// bound by iceberg-go (see the package's Bind).
func (c *Clause) Bind(schema *iceberg.Schema) (unbound, bound iceberg.BooleanExpression, err error) {
	if unbound, err = c.For(schema); err != nil {
		return nil, nil, err
	}
	if bound, err = iceberg.BindExpr(schema, unbound, true); err != nil {
		return nil, nil, fmt.Errorf("WHERE clause does not bind to schema %d: %v", schema.ID, err)
	}
	return unbound, bound, nil
}

// ParseFor is Parse with every column name spelled as schema spells it
// (see Bind), for binding case-sensitively later (an iceberg-go scan).
//
// With the schema, a column it does not have is an error listing its
// columns; a literal that is not a value of its column's type is an
// error naming the column and type; a date ('2026-01-01', DATE
// '2026-01-01') compared with a timestamp column is that day's midnight
// (SQL's cast of a date to a timestamp).
func ParseFor(where string, schema *iceberg.Schema) (iceberg.BooleanExpression, error) {
	c, err := ParseClause(where)
	if err != nil {
		return nil, err
	}
	return c.For(schema)
}

// converter turns a parsed WHERE clause into an Iceberg expression;
// resolve, when set, maps each column name to the schema's spelling, and
// schema, when set, checks columns and literals against it.
type converter struct {
	resolve func(name string) (string, error)
	schema  *iceberg.Schema
}

func (c converter) clause(w *Clause) (iceberg.BooleanExpression, error) {
	if w.Empty() {
		return iceberg.AlwaysTrue{}, nil
	}
	return c.convert(w.expr)
}

// Bind parses where and binds it to schema, literals converted to the
// columns' types. A name binds to the column spelled exactly so, else to
// the one column whose name matches ignoring case; a name that matches
// several columns ignoring case and none exactly is refused as ambiguous
// (SQL folds unquoted names to lower case, so "WHERE UserId = 1" finds
// column UserId, while tables with both user_id and uSeR_Id need the exact
// spelling, quoted).
func Bind(where string, schema *iceberg.Schema) (iceberg.BooleanExpression, error) {
	c, err := ParseClause(where)
	if err != nil {
		return nil, err
	}
	_, bound, err := c.Bind(schema)
	return bound, err
}

// Encode returns the Substrait bytes of a WHERE clause bound to schema.
func Encode(where string, schema *iceberg.Schema) ([]byte, error) {
	bound, err := Bind(where, schema)
	if err != nil {
		return nil, err
	}
	if _, ok := bound.(iceberg.AlwaysTrue); ok {
		return nil, nil
	}
	return predicate.EncodeSubstrait(schema, bound)
}

func unsupported(what string, e tree.Expr) error {
	return fmt.Errorf("WHERE clause: %s is not supported in %q (%s)", what, tree.AsString(e), Supported)
}

func (c converter) convert(e tree.Expr) (iceberg.BooleanExpression, error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return c.convert(x.Expr)
	case *tree.AndExpr:
		l, err := c.convert(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := c.convert(x.Right)
		if err != nil {
			return nil, err
		}
		return iceberg.NewAnd(l, r), nil
	case *tree.OrExpr:
		l, err := c.convert(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := c.convert(x.Right)
		if err != nil {
			return nil, err
		}
		return iceberg.NewOr(l, r), nil
	case *tree.NotExpr:
		c, err := c.convert(x.Expr)
		if err != nil {
			return nil, err
		}
		return iceberg.NewNot(c), nil
	case *tree.IsNullExpr:
		ref, err := c.column(x.Expr)
		if err != nil {
			return nil, err
		}
		return iceberg.IsNull(ref), nil
	case *tree.IsNotNullExpr:
		ref, err := c.column(x.Expr)
		if err != nil {
			return nil, err
		}
		return iceberg.NotNull(ref), nil
	case *tree.DBool:
		if bool(*x) {
			return iceberg.AlwaysTrue{}, nil
		}
		return iceberg.AlwaysFalse{}, nil
	case *tree.RangeCond:
		ref, err := c.column(x.Left)
		if err != nil {
			return nil, err
		}
		lo, err := c.literalFor(ref, x.From)
		if err != nil {
			return nil, err
		}
		hi, err := c.literalFor(ref, x.To)
		if err != nil {
			return nil, err
		}
		between := iceberg.NewAnd(cmp(iceberg.OpGTEQ, ref, lo), cmp(iceberg.OpLTEQ, ref, hi))
		if x.Symmetric {
			between = iceberg.NewOr(between, iceberg.NewAnd(cmp(iceberg.OpGTEQ, ref, hi), cmp(iceberg.OpLTEQ, ref, lo)))
		}
		if x.Not {
			return iceberg.NewNot(between), nil
		}
		return between, nil
	case *tree.FuncExpr:
		name := strings.ToLower(x.Func.String())
		switch {
		case name == "isnan" && len(x.Exprs) == 1:
			ref, err := c.column(x.Exprs[0])
			if err != nil {
				return nil, err
			}
			return iceberg.IsNaN(ref), nil
		case name == "starts_with" && len(x.Exprs) == 2:
			ref, err := c.column(x.Exprs[0])
			if err != nil {
				return nil, err
			}
			p, ok := x.Exprs[1].(*tree.StrVal)
			if !ok {
				return nil, unsupported("starts_with with a non-string prefix", e)
			}
			return iceberg.StartsWith(ref, p.RawString()), nil
		case name == "array_contains" && len(x.Exprs) == 2:
			ref, err := c.column(x.Exprs[0])
			if err != nil {
				return nil, err
			}
			return c.arrayContains(ref, x.Exprs[1], e)
		}
		return nil, unsupported("function "+name, e)
	case *tree.ComparisonExpr:
		return c.comparison(x)
	}
	return nil, unsupported(fmt.Sprintf("expression %T", e), e)
}

// arrayContains is ARRAY_CONTAINS(ref, lit) (an iceberg-go expression
// the predicate package encodes; see predicate.Match).
func (c converter) arrayContains(ref iceberg.UnboundTerm, litExpr tree.Expr, e tree.Expr) (iceberg.BooleanExpression, error) {
	lit, err := literal(litExpr)
	if err != nil {
		return nil, err
	}
	if lit == nil {
		// NULL is never an element that compares equal.
		return iceberg.AlwaysFalse{}, nil
	}
	name, ok := ref.(iceberg.Reference)
	if !ok {
		return nil, unsupported("array_contains over an expression", e)
	}
	return predicate.Match{Column: string(name), MOp: predicate.OpArrayContains, Lit: lit}, nil
}

func (c converter) comparison(x *tree.ComparisonExpr) (iceberg.BooleanExpression, error) {
	sym := x.Operator.Symbol
	if sym == treecmp.Any || sym == treecmp.Some {
		// v = ANY(list)
		if x.SubOperator.Symbol != treecmp.EQ {
			return nil, unsupported("ANY with an operator other than =", x)
		}
		right := x.Right
		if p, ok := right.(*tree.ParenExpr); ok {
			right = p.Expr
		}
		ref, err := c.column(right)
		if err != nil {
			return nil, err
		}
		return c.arrayContains(ref, x.Left, x)
	}
	left, right := x.Left, x.Right
	if _, isCol := left.(*tree.UnresolvedName); !isCol {
		if _, rightCol := right.(*tree.UnresolvedName); rightCol {
			left, right = right, left
			switch sym {
			case treecmp.LT:
				sym = treecmp.GT
			case treecmp.LE:
				sym = treecmp.GE
			case treecmp.GT:
				sym = treecmp.LT
			case treecmp.GE:
				sym = treecmp.LE
			}
		}
	}
	ref, err := c.column(left)
	if err != nil {
		return nil, err
	}
	switch sym {
	case treecmp.In, treecmp.NotIn:
		tup, ok := right.(*tree.Tuple)
		if !ok {
			return nil, unsupported("IN without a literal list", x)
		}
		var lits []iceberg.Literal
		for _, it := range tup.Exprs {
			l, err := c.literalFor(ref, it)
			if err != nil {
				return nil, err
			}
			if l == nil {
				return nil, unsupported("NULL inside IN", x)
			}
			lits = append(lits, l)
		}
		if sym == treecmp.In {
			return iceberg.SetPredicate(iceberg.OpIn, ref, lits), nil
		}
		return iceberg.SetPredicate(iceberg.OpNotIn, ref, lits), nil
	case treecmp.Like, treecmp.NotLike, treecmp.ILike, treecmp.NotILike:
		p, ok := right.(*tree.StrVal)
		if !ok {
			return nil, unsupported("LIKE with a non-string pattern", x)
		}
		pat := p.RawString()
		like := sym == treecmp.Like || sym == treecmp.NotLike
		negated := sym == treecmp.NotLike || sym == treecmp.NotILike
		if prefix, ok := strings.CutSuffix(pat, "%"); ok && like && !strings.ContainsAny(prefix, "%_\\") {
			// 'prefix%' is Iceberg's own starts-with.
			if negated {
				return iceberg.NotStartsWith(ref, prefix), nil
			}
			return iceberg.StartsWith(ref, prefix), nil
		}
		name, ok := ref.(iceberg.Reference)
		if !ok {
			return nil, unsupported("LIKE over an expression", x)
		}
		op := predicate.OpLike
		if !like {
			op = predicate.OpILike
		}
		return predicate.Match{Column: string(name), MOp: op, Lit: iceberg.StringLiteral(pat), Negated: negated}, nil
	}
	lit, err := c.literalFor(ref, right)
	if err != nil {
		return nil, err
	}
	if lit == nil {
		// col = NULL is never true in SQL.
		return iceberg.AlwaysFalse{}, nil
	}
	switch sym {
	case treecmp.EQ:
		return cmp(iceberg.OpEQ, ref, lit), nil
	case treecmp.NE:
		return cmp(iceberg.OpNEQ, ref, lit), nil
	case treecmp.LT:
		return cmp(iceberg.OpLT, ref, lit), nil
	case treecmp.LE:
		return cmp(iceberg.OpLTEQ, ref, lit), nil
	case treecmp.GT:
		return cmp(iceberg.OpGT, ref, lit), nil
	case treecmp.GE:
		return cmp(iceberg.OpGTEQ, ref, lit), nil
	}
	return nil, unsupported("operator "+x.Operator.String(), x)
}

func cmp(op iceberg.Operation, ref iceberg.UnboundTerm, lit iceberg.Literal) iceberg.BooleanExpression {
	return iceberg.LiteralPredicate(op, ref, lit)
}

func (c converter) column(e tree.Expr) (iceberg.UnboundTerm, error) {
	if p, ok := e.(*tree.ParenExpr); ok {
		return c.column(p.Expr)
	}
	if f, ok := e.(*tree.FuncExpr); ok {
		return nil, unsupported("function "+strings.ToLower(f.Func.String())+" applied to a column", e)
	}
	n, ok := e.(*tree.UnresolvedName)
	if !ok || n.Star {
		return nil, unsupported("a comparison whose side is not a column name", e)
	}
	parts := make([]string, 0, n.NumParts)
	for i := n.NumParts - 1; i >= 0; i-- {
		parts = append(parts, n.Parts[i])
	}
	name := strings.Join(parts, ".")
	if c.resolve != nil {
		var err error
		if name, err = c.resolve(name); err != nil {
			return nil, err
		}
	}
	if c.schema != nil {
		if _, ok := c.schema.FindFieldByName(name); !ok {
			return nil, fmt.Errorf("WHERE clause: %w", UnknownColumn(name, c.schema))
		}
	}
	return iceberg.Reference(name), nil
}

// UnknownColumn is the error for a column name schema does not have: it
// lists the schema's columns.
func UnknownColumn(name string, schema *iceberg.Schema) error {
	const most = 40
	var names []string
	for _, n := range schemaNames(schema) {
		parts := strings.Split(n, ".")
		if !slices.ContainsFunc(parts[1:], func(p string) bool { return p == "element" || p == "key" || p == "value" }) {
			names = append(names, n) // lists' and maps' inner names are not columns one writes
		}
	}
	list := strings.Join(names[:min(len(names), most)], ", ")
	if len(names) > most {
		list += fmt.Sprintf(", … (%d columns)", len(names))
	}
	return fmt.Errorf("no column %s; the table's columns are: %s", short(name), list)
}

// dateOnly matches a date without a time of day.
var dateOnly = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// literalFor converts the literal e compared with column ref: checked
// against the column's type when the schema is known (an error names the
// column and type), a date given for a timestamp column read as its
// midnight.
func (c converter) literalFor(ref iceberg.UnboundTerm, e tree.Expr) (iceberg.Literal, error) {
	lit, err := literal(e)
	if err != nil || lit == nil || c.schema == nil {
		return lit, err
	}
	name, ok := ref.(iceberg.Reference)
	if !ok {
		return lit, nil
	}
	f, ok := c.schema.FindFieldByName(string(name))
	if !ok {
		return lit, nil
	}
	if s, isStr := lit.(iceberg.StringLiteral); isStr && dateOnly.MatchString(string(s)) {
		switch f.Type.(type) {
		case iceberg.TimestampType, iceberg.TimestampNsType:
			lit = iceberg.NewLiteral(string(s) + "T00:00:00")
		case iceberg.TimestampTzType, iceberg.TimestampTzNsType:
			lit = iceberg.NewLiteral(string(s) + "T00:00:00+00:00")
		}
	}
	if _, err := lit.To(f.Type); err != nil {
		return nil, typeMismatch(f, lit)
	}
	return lit, nil
}

// typeMismatch says that lit is not a value of column f's type, and how
// to write one.
func typeMismatch(f iceberg.NestedField, lit iceberg.Literal) error {
	var given, hint string
	switch l := lit.(type) {
	case iceberg.StringLiteral:
		given = "the string '" + perr.Truncate(string(l), 48) + "'"
	case iceberg.BoolLiteral:
		given = "the boolean " + lit.String()
	default:
		given = "the number " + perr.Truncate(lit.String(), 48)
	}
	switch f.Type.(type) {
	case iceberg.StringType:
		hint = "; quote it: '" + perr.Truncate(lit.String(), 48) + "'"
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		hint = "; write a number (no quotes)"
	case iceberg.TimestampType, iceberg.TimestampNsType, iceberg.TimestampTzType, iceberg.TimestampTzNsType:
		hint = "; write TIMESTAMP 'YYYY-MM-DD HH:MM:SS' (or DATE 'YYYY-MM-DD' for midnight)"
	case iceberg.DateType:
		hint = "; write DATE 'YYYY-MM-DD'"
	case iceberg.BooleanType:
		hint = "; write TRUE or FALSE"
	}
	return fmt.Errorf("WHERE clause: column %s is %s, and %s is not a %s value%s", f.Name, f.Type, given, f.Type, hint)
}

// literal converts a SQL literal; nil means NULL.
func literal(e tree.Expr) (iceberg.Literal, error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return literal(x.Expr)
	case *tree.NumVal:
		s := x.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return iceberg.NewLiteral(i), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if strings.ContainsAny(s, "eE") {
				return iceberg.NewLiteral(f), nil
			}
			// Keep the exact text: the column may be a decimal.
			return iceberg.NewLiteral(s), nil
		}
		return nil, unsupported("number "+s, e)
	case *tree.StrVal:
		return iceberg.NewLiteral(x.RawString()), nil
	case *tree.DBool:
		return iceberg.NewLiteral(bool(*x)), nil
	case *tree.UnaryExpr:
		if x.Operator.Symbol == tree.UnaryMinus {
			inner, err := literal(x.Expr)
			if err != nil {
				return nil, err
			}
			switch v := inner.(type) {
			case iceberg.Int64Literal:
				return iceberg.NewLiteral(-int64(v)), nil
			case iceberg.Float64Literal:
				return iceberg.NewLiteral(-float64(v)), nil
			case iceberg.StringLiteral:
				return iceberg.NewLiteral("-" + string(v)), nil
			}
		}
		return nil, unsupported("unary expression", e)
	case *tree.CastExpr:
		lit, err := literal(x.Expr)
		if sv, ok := lit.(iceberg.StringLiteral); ok && err == nil {
			typ := strings.ToLower(x.Type.SQLString())
			if strings.HasPrefix(typ, "timestamp") && len(sv) > 10 && sv[10] == ' ' {
				// SQL writes TIMESTAMP '2026-01-01 12:00:00'; Iceberg wants ISO-8601.
				return iceberg.NewLiteral(string(sv[:10]) + "T" + string(sv[11:])), nil
			}
		}
		return lit, err
	case *tree.AnnotateTypeExpr:
		return literal(x.Expr)
	}
	if e == tree.DNull {
		return nil, nil
	}
	return nil, unsupported(fmt.Sprintf("literal %T", e), e)
}

// ErrNoColumns is returned for an empty -select.
var ErrNoColumns = errors.New("no columns selected")

// ResolveName returns the schema's spelling of a (possibly nested, dotted)
// column name: the exact match, else the only match ignoring case. A name
// matching none is returned unchanged (binding then reports it missing);
// one matching several columns ignoring case is an error.
func ResolveName(schema *iceberg.Schema, name string) (string, error) {
	if _, ok := schema.FindFieldByName(name); ok {
		return name, nil
	}
	var matches []string
	for _, full := range schemaNames(schema) {
		if strings.EqualFold(full, name) {
			matches = append(matches, full)
		}
	}
	switch len(matches) {
	case 0:
		return name, nil
	case 1:
		return matches[0], nil
	}
	slices.Sort(matches)
	return "", fmt.Errorf("column name %q is ambiguous in schema %d: it matches %s ignoring case; write the exact name in double quotes", name, schema.ID, strings.Join(quoteAll(matches), ", "))
}

func schemaNames(schema *iceberg.Schema) []string {
	var out []string
	for _, f := range schema.Fields() {
		out = append(out, f.Name)
	}
	// nested names: every field id's full dotted name
	ids := schema.HighestFieldID()
	for id := 1; id <= ids; id++ {
		if n, ok := schema.FindColumnName(id); ok && strings.Contains(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// Columns resolves a comma-separated column list to field ids of schema
// (names resolved as in ResolveName); empty returns nil (every column).
func Columns(list string, schema *iceberg.Schema) ([]int, error) {
	if strings.TrimSpace(list) == "" || strings.TrimSpace(list) == "*" {
		return nil, nil
	}
	names := strings.Split(list, ",")
	for i, name := range names {
		names[i] = strings.Trim(strings.TrimSpace(name), `"`)
	}
	return ColumnIDs(names, schema)
}

// ColumnIDs is the field id of each named column of schema (names resolved
// as ResolveName does).
func ColumnIDs(names []string, schema *iceberg.Schema) ([]int, error) {
	var out []int
	for _, name := range names {
		name, err := ResolveName(schema, name)
		if err != nil {
			return nil, err
		}
		f, ok := schema.FindFieldByName(name)
		if !ok {
			return nil, UnknownColumn(name, schema)
		}
		out = append(out, f.ID)
	}
	return out, nil
}

// RefuseNUL refuses SQL holding a NUL byte: the parser's lexer stops at
// one, so what follows would be silently ignored ("x = 1<NUL> AND y = 2"
// would run as "x = 1").
func RefuseNUL(sql string) error {
	if i := strings.IndexByte(sql, 0); i >= 0 {
		return fmt.Errorf("a NUL byte at offset %d", i)
	}
	return nil
}

// ParserMessage is the SQL parser's error as a message that quotes at most
// perr.MaxQuoted bytes of the SQL: the parser names the token it stopped
// at ("at or near \"…\": syntax error"), and a token can be a string
// literal of any length.
func ParserMessage(err error) string {
	msg := err.Error()
	const near = `at or near "`
	i := strings.Index(msg, near)
	if i < 0 {
		return clipParserMessage(msg)
	}
	rest := msg[i+len(near):]
	j := strings.LastIndex(rest, `"`)
	if j < 0 {
		return clipParserMessage(msg)
	}
	return clipParserMessage(msg[:i]) + "at or near " + perr.Quote(rest[:j]) + clipParserMessage(rest[j+1:])
}

// clipParserMessage keeps at most 4×perr.MaxQuoted bytes of a parser
// message that names no token.
func clipParserMessage(s string) string { return perr.Truncate(s, 4*perr.MaxQuoted) }
