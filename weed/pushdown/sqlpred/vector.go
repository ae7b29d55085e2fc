package sqlpred

// Vector ordering: pgvector's distance operators over a column and a
// query vector, as in
//
//	ORDER BY embedding <-> '[0.1, 0.2, …]'     L2 (Euclidean) distance
//	ORDER BY embedding <=> ARRAY[0.1, 0.2, …]  cosine distance (1 − cos)
//	ORDER BY embedding <#> '[…]'::vector       negative inner product
//
// The query vector is pgvector's text literal ('[1, 2, 3]', optionally cast
// to vector) or an ARRAY[…] of numbers.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree/treebin"
)

// Metric is a vector distance, numbered as pushdown_pb.VectorMetric.
type Metric int32

const (
	L2     Metric = 0 // <->
	Cosine Metric = 1 // <=>
	Dot    Metric = 2 // <#>
)

// Operator is the pgvector operator of m.
func (m Metric) Operator() string {
	switch m {
	case Cosine:
		return "<=>"
	case Dot:
		return "<#>"
	}
	return "<->"
}

// MaxVectorDim bounds the dimensions of a query vector literal.
const MaxVectorDim = 65536

// VectorOrder is one ORDER BY column <op> vector.
type VectorOrder struct {
	Column string
	Metric Metric
	Vector []float32
}

// VectorSupported is the one-line summary shown with ORDER BY errors.
const VectorSupported = "supported: ORDER BY <vector column> <-> | <=> | <#> '[x, y, …]' (or ARRAY[x, y, …]) LIMIT k"

// short quotes at most a short prefix of client text.
func short(s string) string {
	const n = 48
	if len(s) > n {
		return strconv.Quote(s[:n]) + "…"
	}
	return strconv.Quote(s)
}

// IsVectorDistance reports whether an ORDER BY expression is a vector
// distance (pgvector's <->, <=> or <#>), whatever its operands.
func IsVectorDistance(e tree.Expr) bool {
	b, ok := unparen(e).(*tree.BinaryExpr)
	if !ok {
		return false
	}
	_, ok = metricOf(b)
	return ok
}

// unparen is e without its enclosing parentheses.
func unparen(e tree.Expr) tree.Expr {
	for {
		p, ok := e.(*tree.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// metricOf is the vector distance b's operator computes (ok false: none).
func metricOf(b *tree.BinaryExpr) (Metric, bool) {
	switch b.Operator.Symbol {
	case treebin.Distance:
		return L2, true
	case treebin.CosDistance:
		return Cosine, true
	case treebin.NegInnerProduct:
		return Dot, true
	}
	return 0, false
}

// ParseVectorOrder reads an ORDER BY expression that orders by a vector
// distance.
func ParseVectorOrder(e tree.Expr) (*VectorOrder, error) {
	e = unparen(e)
	b, ok := e.(*tree.BinaryExpr)
	if !ok {
		return nil, fmt.Errorf("ORDER BY %s: only a vector distance can order a query (%s)", short(tree.AsString(e)), VectorSupported)
	}
	m, ok := metricOf(b)
	if !ok {
		return nil, fmt.Errorf("ORDER BY with operator %s: only the vector distances <->, <=> and <#> can order a query (%s)", b.Operator.Symbol, VectorSupported)
	}
	col, lit := b.Left, b.Right
	if _, isCol := col.(*tree.UnresolvedName); !isCol {
		col, lit = lit, col
	}
	n, ok := col.(*tree.UnresolvedName)
	if !ok || n.Star {
		return nil, fmt.Errorf("ORDER BY %s: one side of %s must be a column name (%s)", short(tree.AsString(e)), m.Operator(), VectorSupported)
	}
	parts := make([]string, 0, n.NumParts)
	for i := n.NumParts - 1; i >= 0; i-- {
		parts = append(parts, n.Parts[i])
	}
	v, err := VectorLiteral(lit)
	if err != nil {
		return nil, err
	}
	return &VectorOrder{Column: strings.Join(parts, "."), Metric: m, Vector: v}, nil
}

// VectorLiteral reads a query vector: '[1, 2, 3]' (pgvector's text form,
// optionally ::vector), or ARRAY[1, 2, 3].
func VectorLiteral(e tree.Expr) ([]float32, error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return VectorLiteral(x.Expr)
	case *tree.CastExpr:
		typ := strings.ToLower(x.Type.SQLString())
		if !strings.HasPrefix(typ, "vector") && !strings.HasSuffix(typ, "[]") {
			return nil, fmt.Errorf("query vector cast to %s: want vector or an array of numbers", short(typ))
		}
		return VectorLiteral(x.Expr)
	case *tree.AnnotateTypeExpr:
		return VectorLiteral(x.Expr)
	case *tree.StrVal:
		return ParseVector(x.RawString())
	case *tree.Array:
		if len(x.Exprs) > MaxVectorDim {
			return nil, fmt.Errorf("query vector of %d dimensions exceeds %d", len(x.Exprs), MaxVectorDim)
		}
		out := make([]float32, len(x.Exprs))
		for i, el := range x.Exprs {
			f, err := arrayNumber(el)
			if err != nil {
				return nil, fmt.Errorf("query vector element %d: %w", i, err)
			}
			out[i] = f
		}
		return checkVector(out)
	}
	return nil, fmt.Errorf("query vector %s: want '[x, y, …]' or ARRAY[x, y, …] (%s)", short(tree.AsString(e)), VectorSupported)
}

func arrayNumber(e tree.Expr) (float32, error) {
	switch x := e.(type) {
	case *tree.ParenExpr:
		return arrayNumber(x.Expr)
	case *tree.NumVal:
		return parseElement(x.String())
	case *tree.UnaryExpr:
		if x.Operator.Symbol == tree.UnaryMinus {
			f, err := arrayNumber(x.Expr)
			return -f, err
		}
	}
	return 0, fmt.Errorf("%s is not a number", short(tree.AsString(e)))
}

func parseElement(s string) (float32, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a finite number", short(strings.TrimSpace(s)))
	}
	return float32(f), nil
}

// ParseVector reads pgvector's text form of a vector, "[1, 2.5, -3e-2]".
func ParseVector(s string) ([]float32, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, fmt.Errorf("query vector %s: want '[x, y, …]'", short(s))
	}
	body := strings.TrimSpace(t[1 : len(t)-1])
	if body == "" {
		return nil, fmt.Errorf("query vector '[]' is empty")
	}
	if n := strings.Count(body, ",") + 1; n > MaxVectorDim {
		return nil, fmt.Errorf("query vector of %d dimensions exceeds %d", n, MaxVectorDim)
	}
	var out []float32
	for i, el := range strings.Split(body, ",") {
		f, err := parseElement(el)
		if err != nil {
			return nil, fmt.Errorf("query vector element %d: %w", i, err)
		}
		out = append(out, f)
	}
	return checkVector(out)
}

func checkVector(v []float32) ([]float32, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("query vector is empty")
	}
	return v, nil
}
