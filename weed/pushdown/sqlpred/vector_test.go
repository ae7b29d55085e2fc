package sqlpred

import (
	"slices"
	"strings"
	"testing"

	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/parser"
)

func orderOf(t *testing.T, expr string) (*VectorOrder, error) {
	t.Helper()
	e, err := parser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("parse %s: %v", expr, err)
	}
	return ParseVectorOrder(e)
}

func TestPgvectorOperatorsAndLiteralsParseToAMetricAndAVector(t *testing.T) {
	for _, tc := range []struct {
		expr string
		m    Metric
		v    []float32
	}{
		{`embedding <-> '[0.5, -1, 2e1]'`, L2, []float32{0.5, -1, 20}},
		{`embedding <=> ARRAY[1, -2.5, 3]`, Cosine, []float32{1, -2.5, 3}},
		{`embedding <#> '[1,2]'::vector`, Dot, []float32{1, 2}},
		{`embedding <#> '[1,2]'::vector(2)`, Dot, []float32{1, 2}},
		{`'[3]' <-> embedding`, L2, []float32{3}},
		{`(embedding <-> ARRAY[-(1), 2])`, L2, []float32{-1, 2}},
	} {
		vo, err := orderOf(t, tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if vo.Column != "embedding" || vo.Metric != tc.m || !slices.Equal(vo.Vector, tc.v) {
			t.Fatalf("%s: %+v, want %v %v", tc.expr, vo, tc.m, tc.v)
		}
	}
}

func TestBadVectorOrdersAreRefusedNamingTheProblemWithoutEchoingLongInput(t *testing.T) {
	long := "[" + strings.Repeat("1,", 500) + "x]"
	for expr, want := range map[string]string{
		`id`:                           "only a vector distance can order a query",
		`id + 1`:                       "only the vector distances <->, <=> and <#> can order a query",
		`embedding <-> 'abc'`:          "want '[x, y, …]'",
		`embedding <-> '[]'`:           "is empty",
		`embedding <-> '[1, nan]'`:     "element 1",
		`embedding <-> ARRAY['a']`:     "is not a number",
		`embedding <-> '` + long + `'`: "element 500",
		`embedding <-> 42`:             "want '[x, y, …]' or ARRAY",
		`'[1]' <-> '[2]'`:              "must be a column name",
		`embedding <-> '[1]'::int`:     "want vector or an array of numbers",
	} {
		_, err := orderOf(t, expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%.60s: error %v, want it to contain %q", expr, err, want)
		}
		if len(err.Error()) > 400 {
			t.Fatalf("%.60s: error of %d bytes echoes the input: %.200s", expr, len(err.Error()), err)
		}
	}
}
