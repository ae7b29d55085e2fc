// Package sqlstmt is a SELECT as lakeweed's SQL front end understands it,
// and the computation of its answer from records, independent of where the
// records come from: parsing (CockroachDB's parser, as sqlpred), GROUP BY
// and aggregates (our grouping over arrow-go arrays), partial aggregate
// states and their merge, HAVING, ORDER BY (arrow-go's sort_indices +
// take), OFFSET/LIMIT. sqlexec runs a Statement over the connector's
// pushdown reads; the volume servers compute Partials next to the data —
// neither depends on the other through this package.
//
//	SELECT … FROM ns.table WHERE … GROUP BY … HAVING … ORDER BY … LIMIT … OFFSET …
//	   │ Parse                         $n / ? parameters bound by Bind
//	   ▼
//	Statement ── WHERE (sqlpred.Clause), ReadColumns ──▶ the reader (sqlexec: connector)
//	   records ─▶ Layout (plain SELECT) ─▶ Sorter (ORDER BY) ─▶ Cut (OFFSET, LIMIT)
//	           ─▶ Aggregator.Add / AddPartials (volume Partials) ─▶ Finish (HAVING, ORDER BY) ─▶ Cut
package sqlstmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/parser"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// Supported is the one-line summary shown with errors.
const Supported = `supported: SELECT <columns [AS alias] | * | COUNT(*) | COUNT([DISTINCT] col) | SUM(col) | MIN(col) | MAX(col) | AVG(col)> ` +
	`FROM namespace.table [WHERE <predicate>] [GROUP BY columns] [HAVING <condition>] ` +
	`[ORDER BY <output columns> [ASC|DESC] [NULLS FIRST|LAST] | <vector column> <-> '[x, …]'] [LIMIT n] [OFFSET m]`

// Func is an aggregate function.
type Func string

const (
	Count Func = "count"
	Sum   Func = "sum"
	Min   Func = "min"
	Max   Func = "max"
	Avg   Func = "avg"
)

// Agg is one aggregate call.
type Agg struct {
	Func     Func
	Column   string // "" for COUNT(*)
	Distinct bool   // COUNT(DISTINCT col)
}

// String is the call as SQL.
func (a Agg) String() string {
	switch {
	case a.Column == "":
		return string(a.Func) + "(*)"
	case a.Distinct:
		return string(a.Func) + "(DISTINCT " + a.Column + ")"
	}
	return string(a.Func) + "(" + a.Column + ")"
}

// Item is one output column: a table column or an aggregate.
type Item struct {
	Name   string // output name: the alias, else the column or the call
	Column string // a table column (Agg nil)
	Agg    *Agg
	// Hidden items are computed for HAVING or ORDER BY and dropped from
	// the output.
	Hidden bool
}

// Order is one ORDER BY key over an output item.
type Order struct {
	Item       int
	Desc       bool
	NullsFirst bool
}

// Statement is a parsed SELECT.
type Statement struct {
	Table string
	// Star: SELECT * (Items then empty).
	Star  bool
	Items []Item
	Where string // the WHERE as SQL ("": none)
	// where is the WHERE as parsed with the statement, handed to the
	// connector so it is not parsed again.
	where     *sqlpred.Clause
	GroupBy   []string
	Aggregate bool // aggregates or GROUP BY: one row a group
	Having    tree.Expr
	Orders    []Order
	Limit     int64 // 0: none, see HasLimit
	HasLimit  bool
	Offset    int64
	Vector    *sqlpred.VectorOrder
	// Params is the number of parameters ($1…$n, or ?) the statement
	// takes; Bind replaces them.
	Params int
	// sel is the parsed statement, for Bind.
	sel *tree.Select
}

func Unsupported(what string) error {
	return perr.New(perr.InvalidArgument, "SQL: %s is not supported (%s)", what, Supported)
}

// Parse parses one SELECT. Parameters ($1, $2, … or ?) are left for Bind.
func Parse(sql string) (*Statement, error) {
	if err := sqlpred.RefuseNUL(sql); err != nil {
		return nil, perr.New(perr.InvalidArgument, "SQL: %v", err)
	}
	sql, n := numberQuestionMarks(sql)
	stmts, err := parser.Parse(sql)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "SQL: %s (%s)", sqlpred.ParserMessage(err), Supported)
	}
	if len(stmts) != 1 {
		return nil, perr.New(perr.InvalidArgument, "SQL: one statement expected, got %d (%s)", len(stmts), Supported)
	}
	sel, ok := stmts[0].AST.(*tree.Select)
	if !ok {
		return nil, Unsupported(fmt.Sprintf("the statement %s", strings.ToUpper(stmts[0].AST.StatementTag())))
	}
	if n == 0 {
		n = countPlaceholders(sel)
	}
	if n > 0 {
		return &Statement{Params: n, sel: sel}, nil
	}
	return build(sel)
}

// Bind returns the statement with its parameters replaced by params (Go
// values: nil, bool, integers, floats, strings, time.Time).
func (s *Statement) Bind(params []any) (*Statement, error) {
	if s.sel == nil || s.Params == 0 {
		if len(params) > 0 {
			return nil, perr.New(perr.InvalidArgument, "SQL: the statement takes no parameters, %d given", len(params))
		}
		return s, nil
	}
	if len(params) != s.Params {
		return nil, perr.New(perr.InvalidArgument, "SQL: the statement takes %d parameters, %d given", s.Params, len(params))
	}
	lits := make([]tree.Expr, len(params))
	for i, p := range params {
		text, err := sqlLiteral(p)
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "SQL: parameter %d: %v", i+1, err)
		}
		e, err := parser.ParseExpr(text)
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "SQL: parameter %d: %s", i+1, sqlpred.ParserMessage(err))
		}
		lits[i] = e
	}
	// Re-parse the statement's text with the literals in place: the AST is
	// shared by every execution of a prepared statement.
	replace := func(e tree.Expr) (bool, tree.Expr, error) {
		if p, ok := e.(*tree.Placeholder); ok {
			return false, lits[p.Idx], nil
		}
		return true, e, nil
	}
	text := tree.AsString(s.sel)
	stmts, err := parser.Parse(text)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "SQL: %s", sqlpred.ParserMessage(err))
	}
	bound, err := tree.SimpleStmtVisit(stmts[0].AST, replace)
	if err != nil {
		return nil, err
	}
	sel, ok := bound.(*tree.Select)
	if !ok {
		return nil, Unsupported("the statement")
	}
	return build(sel)
}

// WhereClause is the statement's WHERE as parsed with it (parsed from
// Where only for a Statement built without Parse): hand it to the reader
// so the SQL is parsed once.
func (s *Statement) WhereClause() (*sqlpred.Clause, error) {
	if s.where != nil {
		return s.where, nil
	}
	return sqlpred.ParseClause(s.Where)
}

// numberQuestionMarks rewrites ODBC/JDBC-style ? parameters (outside
// string literals and quoted names) as $1, $2, …; n is how many.
func numberQuestionMarks(sql string) (string, int) {
	if !strings.Contains(sql, "?") {
		return sql, 0
	}
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), n
}

func countPlaceholders(sel *tree.Select) int {
	n := 0
	_, _ = tree.SimpleStmtVisit(sel, func(e tree.Expr) (bool, tree.Expr, error) {
		if p, ok := e.(*tree.Placeholder); ok && int(p.Idx)+1 > n {
			n = int(p.Idx) + 1
		}
		return true, e, nil
	})
	return n
}

// build reads a SELECT without parameters.
func build(sel *tree.Select) (*Statement, error) {
	clause, ok := sel.Select.(*tree.SelectClause)
	if !ok {
		return nil, Unsupported(perr.Quote(tree.AsString(sel.Select)) + " (UNION, VALUES and subqueries)")
	}
	if sel.With != nil {
		return nil, Unsupported("WITH")
	}
	switch {
	case clause.Distinct:
		return nil, Unsupported("SELECT DISTINCT (use GROUP BY)")
	case clause.Window != nil:
		return nil, Unsupported("WINDOW")
	}
	if len(clause.From.Tables) != 1 {
		return nil, perr.New(perr.InvalidArgument, "SQL: exactly one table in FROM; joins and comma lists are not supported (%s)", Supported)
	}
	ate, ok := clause.From.Tables[0].(*tree.AliasedTableExpr)
	if !ok {
		return nil, Unsupported("FROM " + perr.Quote(tree.AsString(clause.From.Tables[0])) + " (joins and subqueries)")
	}
	tn, ok := ate.Expr.(*tree.TableName)
	if !ok {
		return nil, Unsupported("FROM " + perr.Quote(tree.AsString(ate.Expr)))
	}
	if !tn.ExplicitSchema {
		return nil, perr.New(perr.InvalidArgument, "SQL: FROM needs namespace.table, got %s", perr.Quote(tree.AsString(ate.Expr)))
	}
	s := &Statement{Table: string(tn.SchemaName) + "." + string(tn.ObjectName)}
	if tn.ExplicitCatalog {
		s.Table = string(tn.CatalogName) + "." + s.Table
	}
	if clause.Where != nil {
		s.where = sqlpred.ClauseOf(clause.Where.Expr)
		s.Where = s.where.Text
	}
	for _, g := range clause.GroupBy {
		name, ok := columnName(g)
		if !ok {
			return nil, Unsupported("GROUP BY " + perr.Quote(tree.AsString(g)) + " (group by columns)")
		}
		s.GroupBy = append(s.GroupBy, name)
	}
	for _, se := range clause.Exprs {
		if err := s.addItem(se); err != nil {
			return nil, err
		}
	}
	s.Aggregate = len(s.GroupBy) > 0
	for _, it := range s.Items {
		if it.Agg != nil {
			s.Aggregate = true
		}
	}
	if s.Aggregate {
		if s.Star {
			return nil, Unsupported("SELECT * with aggregates or GROUP BY")
		}
		for _, it := range s.Items {
			if it.Agg == nil && !contains(s.GroupBy, it.Column) {
				return nil, perr.New(perr.InvalidArgument, "SQL: column %s must appear in GROUP BY or be used in an aggregate", perr.Quote(it.Column))
			}
		}
	}
	if clause.Having != nil {
		if !s.Aggregate {
			return nil, perr.New(perr.InvalidArgument, "SQL: HAVING needs aggregates or GROUP BY")
		}
		h, err := s.bindHaving(clause.Having.Expr)
		if err != nil {
			return nil, err
		}
		s.Having = h
	}
	if err := s.limit(sel); err != nil {
		return nil, err
	}
	if len(sel.OrderBy) > 0 {
		if err := s.orderBy(sel); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// columnName is the dotted name of a column reference.
func columnName(e tree.Expr) (string, bool) {
	if p, ok := e.(*tree.ParenExpr); ok {
		return columnName(p.Expr)
	}
	n, ok := e.(*tree.UnresolvedName)
	if !ok || n.Star {
		return "", false
	}
	parts := make([]string, 0, n.NumParts)
	for i := n.NumParts - 1; i >= 0; i-- {
		parts = append(parts, n.Parts[i])
	}
	return strings.Join(parts, "."), true
}

func (s *Statement) addItem(se tree.SelectExpr) error {
	switch x := se.Expr.(type) {
	case tree.UnqualifiedStar:
		s.Star = true
		return nil
	case *tree.UnresolvedName:
		if x.Star {
			s.Star = true
			return nil
		}
	}
	if s.Star {
		return Unsupported("* beside other select items")
	}
	if name, ok := columnName(se.Expr); ok {
		it := Item{Name: name, Column: name}
		if se.As != "" {
			it.Name = string(se.As)
		}
		s.Items = append(s.Items, it)
		return nil
	}
	agg, err := aggregate(se.Expr)
	if err != nil {
		return err
	}
	it := Item{Name: agg.String(), Agg: agg}
	if se.As != "" {
		it.Name = string(se.As)
	}
	s.Items = append(s.Items, it)
	return nil
}

// aggregate reads an aggregate call.
func aggregate(e tree.Expr) (*Agg, error) {
	if p, ok := e.(*tree.ParenExpr); ok {
		return aggregate(p.Expr)
	}
	f, ok := e.(*tree.FuncExpr)
	if !ok {
		return nil, Unsupported("the select item " + perr.Quote(tree.AsString(e)) + " (not a column or an aggregate; expressions are not computed)")
	}
	name := strings.ToLower(f.Func.String())
	if f.WindowDef != nil {
		return nil, Unsupported("the window function " + perr.Quote(tree.AsString(f)))
	}
	fn := Func(name)
	switch fn {
	case Count, Sum, Min, Max, Avg:
	default:
		return nil, Unsupported("the function " + perr.Quote(name))
	}
	switch {
	case f.WindowDef != nil:
		return nil, Unsupported("the window function " + perr.Quote(tree.AsString(f)))
	case f.Filter != nil:
		return nil, Unsupported("FILTER on " + name)
	case len(f.OrderBy) > 0:
		return nil, Unsupported("ORDER BY inside " + name)
	}
	if len(f.Exprs) != 1 {
		return nil, perr.New(perr.InvalidArgument, "SQL: %s takes one argument, got %d", name, len(f.Exprs))
	}
	a := &Agg{Func: fn, Distinct: f.Type == tree.DistinctFuncType}
	switch arg := f.Exprs[0].(type) {
	case tree.UnqualifiedStar:
		if fn != Count || a.Distinct {
			return nil, Unsupported(name + "(*)")
		}
		return a, nil
	case *tree.UnresolvedName:
		if arg.Star {
			if fn != Count || a.Distinct {
				return nil, Unsupported(name + "(*)")
			}
			return a, nil
		}
	}
	col, ok := columnName(f.Exprs[0])
	if !ok {
		if _, isNum := f.Exprs[0].(*tree.NumVal); isNum && fn == Count && !a.Distinct {
			return a, nil // COUNT(1)
		}
		return nil, Unsupported("the aggregate argument " + perr.Quote(tree.AsString(f.Exprs[0])) + " (a column name is)")
	}
	if a.Distinct && fn != Count {
		return nil, Unsupported(strings.ToUpper(name) + "(DISTINCT …) (only COUNT(DISTINCT col))")
	}
	a.Column = col
	return a, nil
}

// item finds (or adds, hidden) the output item an expression of ORDER BY
// or HAVING names: an alias, an output position, a column, an aggregate.
func (s *Statement) item(e tree.Expr, where string) (int, error) {
	if n, ok := e.(*tree.NumVal); ok && where == "ORDER BY" {
		i, err := strconv.Atoi(n.String())
		visible := 0
		for _, it := range s.Items {
			if !it.Hidden {
				visible++
			}
		}
		if err != nil || i < 1 || i > visible || s.Star {
			return 0, perr.New(perr.InvalidArgument, "SQL: ORDER BY %s is not an output column position (1 to %d)", perr.Quote(n.String()), visible)
		}
		return i - 1, nil
	}
	if name, ok := columnName(e); ok {
		for i, it := range s.Items {
			if it.Name == name && !it.Hidden {
				return i, nil
			}
		}
		for i, it := range s.Items {
			if it.Agg == nil && it.Column == name {
				return i, nil
			}
		}
		if s.Aggregate && !contains(s.GroupBy, name) {
			return 0, perr.New(perr.InvalidArgument, "SQL: %s %s: the column must appear in GROUP BY or be used in an aggregate", where, perr.Quote(name))
		}
		s.Items = append(s.Items, Item{Name: name, Column: name, Hidden: true})
		return len(s.Items) - 1, nil
	}
	if _, isFunc := e.(*tree.FuncExpr); !isFunc {
		return 0, Unsupported(where + " " + perr.Quote(tree.AsString(e)) + " (output columns, aliases, positions and aggregates are)")
	}
	agg, err := aggregate(e)
	if err != nil {
		return 0, err
	}
	if !s.Aggregate {
		s.Aggregate = true // ORDER BY count(*) without a GROUP BY: one row
		for _, it := range s.Items {
			if it.Agg == nil {
				return 0, perr.New(perr.InvalidArgument, "SQL: column %s must appear in GROUP BY or be used in an aggregate", perr.Quote(it.Column))
			}
		}
	}
	for i, it := range s.Items {
		if it.Agg != nil && *it.Agg == *agg {
			return i, nil
		}
	}
	s.Items = append(s.Items, Item{Name: agg.String(), Agg: agg, Hidden: true})
	return len(s.Items) - 1, nil
}

func (s *Statement) limit(sel *tree.Select) error {
	if sel.Limit == nil {
		return nil
	}
	if sel.Limit.Count != nil {
		n, err := strconv.ParseInt(tree.AsString(sel.Limit.Count), 10, 64)
		if err != nil || n < 0 {
			return perr.New(perr.InvalidArgument, "SQL: LIMIT %s is not a non-negative integer", perr.Quote(tree.AsString(sel.Limit.Count)))
		}
		s.Limit, s.HasLimit = n, true
	}
	if sel.Limit.Offset != nil {
		n, err := strconv.ParseInt(tree.AsString(sel.Limit.Offset), 10, 64)
		if err != nil || n < 0 {
			return perr.New(perr.InvalidArgument, "SQL: OFFSET %s is not a non-negative integer", perr.Quote(tree.AsString(sel.Limit.Offset)))
		}
		s.Offset = n
	}
	return nil
}

func (s *Statement) orderBy(sel *tree.Select) error {
	if len(sel.OrderBy) == 1 && sqlpred.IsVectorDistance(sel.OrderBy[0].Expr) {
		return s.vectorOrder(sel.OrderBy[0])
	}
	for _, o := range sel.OrderBy {
		if o.OrderType != tree.OrderByColumn {
			return Unsupported("ORDER BY " + perr.Quote(tree.AsString(o)))
		}
		if sqlpred.IsVectorDistance(o.Expr) {
			return perr.New(perr.InvalidArgument, "SQL: ORDER BY a vector distance takes no other ORDER BY terms (%s)", sqlpred.VectorSupported)
		}
		i, err := s.item(o.Expr, "ORDER BY")
		if err != nil {
			return err
		}
		if s.Star {
			return Unsupported("ORDER BY with SELECT * (name the columns)")
		}
		ord := Order{Item: i, Desc: o.Direction == tree.Descending}
		// PostgreSQL's default: NULLs sort as if larger than every value.
		ord.NullsFirst = ord.Desc
		switch o.NullsOrder {
		case tree.NullsFirst:
			ord.NullsFirst = true
		case tree.NullsLast:
			ord.NullsFirst = false
		}
		s.Orders = append(s.Orders, ord)
	}
	return nil
}

// vectorOrder reads ORDER BY <column> <distance operator> <vector>, which
// needs a LIMIT of 1 to vector.MaxK.
func (s *Statement) vectorOrder(o *tree.Order) error {
	if o.OrderType != tree.OrderByColumn {
		return Unsupported("ORDER BY " + perr.Quote(tree.AsString(o)))
	}
	if s.Aggregate {
		return Unsupported("ORDER BY a vector distance with aggregates or GROUP BY")
	}
	if o.Direction == tree.Descending || o.NullsOrder != tree.DefaultNullsOrder {
		return perr.New(perr.InvalidArgument, "SQL: ORDER BY a vector distance is ascending (nearest first); DESC and NULLS FIRST/LAST are not supported (%s)", sqlpred.VectorSupported)
	}
	vo, err := sqlpred.ParseVectorOrder(o.Expr)
	if err != nil {
		return perr.New(perr.InvalidArgument, "SQL: %v", err)
	}
	if !s.HasLimit {
		return perr.New(perr.InvalidArgument, "SQL: ORDER BY %s %s needs LIMIT k (1 to %d): a vector query returns the k nearest rows", perr.Quote(vo.Column), vo.Metric.Operator(), vector.MaxK)
	}
	if s.Offset > 0 {
		return perr.New(perr.InvalidArgument, "SQL: OFFSET is not supported with ORDER BY a vector distance (%s)", sqlpred.VectorSupported)
	}
	if s.Limit < 1 || s.Limit > vector.MaxK {
		return perr.New(perr.InvalidArgument, "SQL: LIMIT %d with ORDER BY a vector distance: want 1 to %d", s.Limit, vector.MaxK)
	}
	s.Vector = vo
	return nil
}

// sqlLiteral writes a parameter value as a SQL literal.
func sqlLiteral(p any) (string, error) {
	switch v := p.(type) {
	case nil:
		return "NULL", nil
	case bool:
		return strconv.FormatBool(v), nil
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
	case []byte:
		return "'" + strings.ReplaceAll(string(v), "'", "''") + "'", nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", fmt.Errorf("%v is not a number a literal can hold", v)
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s, nil
	case time.Time:
		return "TIMESTAMP '" + v.UTC().Format("2006-01-02 15:04:05.999999") + "'", nil
	}
	return "", fmt.Errorf("values of Go type %T are not supported", p)
}

// Canonical is st with every column it names (items, aggregate arguments,
// GROUP BY) replaced by resolve's answer: the table's spelling.
func (st *Statement) Canonical(resolve func(name string) (string, error)) (*Statement, error) {
	c := *st
	c.Items = make([]Item, len(st.Items))
	for i, it := range st.Items {
		var err error
		if it.Agg == nil {
			if it.Column, err = resolve(it.Column); err != nil {
				return nil, err
			}
		} else if it.Agg.Column != "" {
			a := *it.Agg
			if a.Column, err = resolve(a.Column); err != nil {
				return nil, err
			}
			it.Agg = &a
		}
		c.Items[i] = it
	}
	c.GroupBy = make([]string, len(st.GroupBy))
	for i, g := range st.GroupBy {
		var err error
		if c.GroupBy[i], err = resolve(g); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// ReadColumns are the distinct table columns of items (and extra), in
// first-use order: what a reader is asked for.
func ReadColumns(items []Item, extra []string) []string {
	var out []string
	add := func(c string) {
		if c != "" && !contains(out, c) {
			out = append(out, c)
		}
	}
	for _, g := range extra {
		add(g)
	}
	for _, it := range items {
		if it.Agg != nil {
			add(it.Agg.Column)
		} else {
			add(it.Column)
		}
	}
	return out
}
