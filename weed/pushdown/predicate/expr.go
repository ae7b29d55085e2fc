// Package predicate holds query predicates bound to Iceberg field ids: the
// two wire decoders (Substrait ExtendedExpression read with substrait-go,
// Iceberg expression JSON), the conversion of an iceberg-go bound
// expression in the process that holds it (FromBound), binding against a
// table schema, normalization, and row-level evaluation (the oracle of the
// differential tests and the connector's residual).
//
//	wire bytes ──Decode*──▶ Expr (field ids, raw literals)
//	bound iceberg-go expression ──FromBound──▶ Expr (the same, no wire)
//	            ──Bind(schema)──▶ Expr (typed Values, NOT pushed to leaves)
//	            ──▶ planner tiers ask MightMatch per file / row group / page
//
// Row semantics. A row matches when the predicate is TRUE under SQL
// three-valued logic (NULL never satisfies a comparison). Engines disagree
// on NaN: IEEE engines (Arrow compute) treat every comparison with NaN as
// false except !=; SQL engines and Iceberg's Java comparators (Spark, DuckDB,
// Trino) order NaN above every number and equal to itself, and order -0.0
// below +0.0. Pruning keeps a row when it matches under either view, so a
// plan is sound for both kinds of reader.
package predicate

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Op is a leaf operator. Negations (!=, NOT IN, NOT NULL, NOT NAN, NOT
// STARTS_WITH, NOT LIKE, NOT ARRAY_CONTAINS) are the base operator with
// Leaf.Negated set.
//
// LIKE and ILIKE take one pattern ('%' any run, '_' one character, '\'
// escapes the next character; ILIKE folds case with Unicode simple
// folding, rune by rune, as strings.EqualFold). ARRAY_CONTAINS(list, v)
// (also v = ANY(list)) is TRUE when an element equals v, NULL when the
// list is NULL or, no element equalling v, one is NULL, FALSE otherwise.
type Op uint8

const (
	OpEq Op = iota + 1
	OpLt
	OpLtEq
	OpGt
	OpGtEq
	OpIn
	OpIsNull
	OpIsNaN
	OpStartsWith
	OpLike
	OpILike
	OpArrayContains
)

func (o Op) String() string {
	switch o {
	case OpEq:
		return "="
	case OpLt:
		return "<"
	case OpLtEq:
		return "<="
	case OpGt:
		return ">"
	case OpGtEq:
		return ">="
	case OpIn:
		return "IN"
	case OpIsNull:
		return "IS NULL"
	case OpIsNaN:
		return "IS NAN"
	case OpStartsWith:
		return "STARTS_WITH"
	case OpLike:
		return "LIKE"
	case OpILike:
		return "ILIKE"
	case OpArrayContains:
		return "ARRAY_CONTAINS"
	}
	return "?"
}

// Expr is a predicate expression.
type Expr interface {
	String() string
	isExpr()
}

// And is the conjunction of its children.
type And struct{ Kids []Expr }

// Or is the disjunction of its children.
type Or struct{ Kids []Expr }

// Not negates its child (only before binding: Bind pushes it to the leaves).
type Not struct{ Kid Expr }

// Const is TRUE or FALSE.
type Const struct{ Value bool }

// Residual is a part of a predicate the planner cannot use for pruning; it
// always might match. The connector evaluates it on rows.
type Residual struct{ Reason string }

// Leaf compares one column with literals.
type Leaf struct {
	FieldID int
	Name    string // the field's name in the bound schema, for messages
	Op      Op
	Negated bool
	// Raw literals as decoded from the wire, converted at Bind time.
	Raw []iceberg.Literal
	// Bound values (Bind), in the field's comparison domain.
	Lits []value.Value
	// Type is the field's Iceberg type (Bind).
	Type iceberg.Type
	// in is Lits sorted for lookups, for a long IN list (Bind; nil: walk
	// Lits). Copies of a leaf that keep its Lits may share it.
	in *sortedIn
}

func (And) isExpr()      {}
func (Or) isExpr()       {}
func (Not) isExpr()      {}
func (Const) isExpr()    {}
func (Residual) isExpr() {}
func (*Leaf) isExpr()    {}

func join(kids []Expr, sep string) string {
	parts := make([]string, len(kids))
	for i, k := range kids {
		parts[i] = k.String()
	}
	return "(" + strings.Join(parts, sep) + ")"
}

func (a And) String() string      { return join(a.Kids, " AND ") }
func (o Or) String() string       { return join(o.Kids, " OR ") }
func (n Not) String() string      { return "NOT " + n.Kid.String() }
func (r Residual) String() string { return "residual(" + r.Reason + ")" }
func (c Const) String() string {
	if c.Value {
		return "TRUE"
	}
	return "FALSE"
}

func (l *Leaf) String() string {
	col := l.Name
	if col == "" {
		col = fmt.Sprintf("field#%d", l.FieldID)
	} else {
		col = fmt.Sprintf("%s#%d", col, l.FieldID)
	}
	var lits []string
	if len(l.Lits) > 0 {
		for _, v := range l.Lits {
			lits = append(lits, v.String())
		}
	} else {
		for _, v := range l.Raw {
			lits = append(lits, v.String())
		}
	}
	neg := ""
	if l.Negated {
		neg = "NOT "
	}
	switch l.Op {
	case OpIsNull, OpIsNaN:
		if l.Negated {
			return col + " " + strings.Replace(l.Op.String(), "IS ", "IS NOT ", 1)
		}
		return col + " " + l.Op.String()
	case OpIn:
		return fmt.Sprintf("%s %sIN (%s)", col, neg, strings.Join(lits, ", "))
	case OpStartsWith, OpArrayContains:
		return fmt.Sprintf("%s%s(%s, %s)", neg, l.Op, col, strings.Join(lits, ", "))
	case OpLike, OpILike:
		return fmt.Sprintf("%s %s%s %s", col, neg, l.Op, strings.Join(lits, ", "))
	case OpEq:
		if l.Negated {
			return fmt.Sprintf("%s != %s", col, strings.Join(lits, ", "))
		}
	}
	if l.Negated {
		return fmt.Sprintf("NOT (%s %s %s)", col, l.Op, strings.Join(lits, ", "))
	}
	return fmt.Sprintf("%s %s %s", col, l.Op, strings.Join(lits, ", "))
}

// Negate returns NOT e with the negation pushed to the leaves (De Morgan;
// valid in three-valued logic).
func Negate(e Expr) Expr {
	switch x := e.(type) {
	case And:
		kids := make([]Expr, len(x.Kids))
		for i, k := range x.Kids {
			kids[i] = Negate(k)
		}
		return Or{Kids: kids}
	case Or:
		kids := make([]Expr, len(x.Kids))
		for i, k := range x.Kids {
			kids[i] = Negate(k)
		}
		return And{Kids: kids}
	case Not:
		return Normalize(x.Kid)
	case Const:
		return Const{Value: !x.Value}
	case Residual:
		return x
	case *Leaf:
		c := *x
		c.Negated = !c.Negated
		return &c
	}
	return Residual{Reason: "unknown expression"}
}

// Normalize pushes every NOT to the leaves and folds constants.
func Normalize(e Expr) Expr {
	switch x := e.(type) {
	case And:
		var kids []Expr
		for _, k := range x.Kids {
			n := Normalize(k)
			if c, ok := n.(Const); ok {
				if !c.Value {
					return Const{Value: false}
				}
				continue
			}
			if a, ok := n.(And); ok {
				kids = append(kids, a.Kids...)
				continue
			}
			kids = append(kids, n)
		}
		switch len(kids) {
		case 0:
			return Const{Value: true}
		case 1:
			return kids[0]
		}
		return And{Kids: kids}
	case Or:
		var kids []Expr
		for _, k := range x.Kids {
			n := Normalize(k)
			if c, ok := n.(Const); ok {
				if c.Value {
					return Const{Value: true}
				}
				continue
			}
			if o, ok := n.(Or); ok {
				kids = append(kids, o.Kids...)
				continue
			}
			kids = append(kids, n)
		}
		switch len(kids) {
		case 0:
			return Const{Value: false}
		case 1:
			return kids[0]
		}
		return Or{Kids: kids}
	case Not:
		return Normalize(Negate(x.Kid))
	}
	return e
}

// Walk calls fn for every leaf of e.
func Walk(e Expr, fn func(*Leaf)) {
	switch x := e.(type) {
	case And:
		for _, k := range x.Kids {
			Walk(k, fn)
		}
	case Or:
		for _, k := range x.Kids {
			Walk(k, fn)
		}
	case Not:
		Walk(x.Kid, fn)
	case *Leaf:
		fn(x)
	}
}

// FieldIDs returns the distinct field ids e references.
func FieldIDs(e Expr) []int {
	seen := map[int]bool{}
	var out []int
	Walk(e, func(l *Leaf) {
		if !seen[l.FieldID] {
			seen[l.FieldID] = true
			out = append(out, l.FieldID)
		}
	})
	return out
}

// Residuals lists the reasons of the residual parts of e.
func Residuals(e Expr) []string {
	var out []string
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case And:
			for _, k := range x.Kids {
				walk(k)
			}
		case Or:
			for _, k := range x.Kids {
				walk(k)
			}
		case Not:
			walk(x.Kid)
		case Residual:
			out = append(out, x.Reason)
		}
	}
	walk(e)
	return out
}

// Depth returns the nesting depth of e.
func Depth(e Expr) int {
	switch x := e.(type) {
	case And:
		return 1 + maxDepth(x.Kids)
	case Or:
		return 1 + maxDepth(x.Kids)
	case Not:
		return 1 + Depth(x.Kid)
	}
	return 1
}

func maxDepth(kids []Expr) int {
	m := 0
	for _, k := range kids {
		m = max(m, Depth(k))
	}
	return m
}
