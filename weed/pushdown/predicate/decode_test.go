package predicate

import (
	"math"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

func TestIcebergJSONDecodesEveryOperatorByFieldID(t *testing.T) {
	s := fuzzSchema()
	cases := map[string]string{
		`{"type":"eq","term":{"field-id":1},"value":5}`:                                                           "id#1 = 5",
		`{"type":"not-eq","term":{"field-id":2},"value":"x"}`:                                                     `name#2 != "x"`,
		`{"type":"lt","term":{"field-id":3},"value":1.5}`:                                                         "score#3 < 1.5",
		`{"type":"lt-eq","term":{"field-id":4},"value":"2026-01-02"}`:                                             "day#4 <= 20455",
		`{"type":"gt","term":{"field-id":5},"value":"12.5"}`:                                                      "amount#5 > 12.500",
		`{"type":"gt-eq","term":{"type":"reference","field-id":7},"value":3}`:                                     "s.inner#7 >= 3",
		`{"type":"in","term":{"field-id":1},"values":[1,2]}`:                                                      "id#1 IN (1, 2)",
		`{"type":"not-in","term":{"field-id":2},"values":["a"]}`:                                                  `name#2 NOT IN ("a")`,
		`{"type":"is-null","term":{"field-id":2}}`:                                                                "name#2 IS NULL",
		`{"type":"not-null","term":{"field-id":2}}`:                                                               "name#2 IS NOT NULL",
		`{"type":"is-nan","term":{"field-id":3}}`:                                                                 "score#3 IS NAN",
		`{"type":"not-nan","term":{"field-id":3}}`:                                                                "score#3 IS NOT NAN",
		`{"type":"starts-with","term":{"field-id":2},"value":"ab"}`:                                               `STARTS_WITH(name#2, "ab")`,
		`{"type":"not-starts-with","term":{"field-id":2},"value":"ab"}`:                                           `NOT STARTS_WITH(name#2, "ab")`,
		`{"type":"not","child":{"type":"and","left":true,"right":{"type":"eq","term":{"field-id":1},"value":1}}}`: "id#1 != 1",
		`{"type":"or","left":{"type":"false"},"right":{"type":"eq","term":{"field-id":3},"value":"NaN"}}`:         "score#3 = NaN",
	}
	for in, want := range cases {
		e, err := DecodeIcebergJSON([]byte(in), s)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		b, err := Bind(e, s, DefaultLimits)
		if err != nil {
			t.Errorf("%s: bind: %v", in, err)
			continue
		}
		if b.String() != want {
			t.Errorf("%s:\n got  %s\n want %s", in, b, want)
		}
	}
}

func TestPredicatesThatDoNotBindAreRefusedNamingTheProblem(t *testing.T) {
	s := fuzzSchema()
	cases := map[string]string{
		`{"type":"eq","term":"id","value":1}`:                              "name-only reference",
		`{"type":"eq","term":{"name":"id"},"value":1}`:                     "name-only",
		`{"type":"eq","term":{"field-id":42},"value":1}`:                   "field id 42",
		`{"type":"eq","term":{"field-id":9},"value":"x"}`:                  "inside a list",
		`{"type":"eq","term":{"field-id":6},"value":1}`:                    "cannot compare",
		`{"type":"eq","term":{"field-id":1},"value":"seven"}`:              "id",
		`{"type":"is-nan","term":{"field-id":1}}`:                          "not float or double",
		`{"type":"starts-with","term":{"field-id":1},"value":"1"}`:         "not string",
		`{"type":"in","term":{"field-id":1},"values":[]}`:                  "empty list",
		`{"type":"eq","term":{"field-id":1},"value":null}`:                 "NULL",
		`{"type":"eq","term":{"field-id":1}}`:                              "no \"value\"",
		`{"term":{"field-id":1}}`:                                          "no \"type\"",
		`{"type":"eq","term":{"field-id":-3},"value":1}`:                   "positive",
		`{"type":"eq","term":{"field-id":1},"value":99999999999999999999}`: "id",
		`not json`: "not valid JSON",
	}
	for in, want := range cases {
		e, err := DecodeIcebergJSON([]byte(in), s)
		if err == nil {
			_, err = Bind(e, s, DefaultLimits)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", in, err, want)
		}
	}
}

func TestPredicateShapeLimitsAreEnforced(t *testing.T) {
	s := fuzzSchema()
	deep := `{"type":"eq","term":{"field-id":1},"value":1}`
	for i := 0; i < 80; i++ {
		deep = `{"type":"not","child":` + deep + `}`
	}
	e, err := DecodeIcebergJSON([]byte(deep), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Bind(e, s, DefaultLimits); err == nil || !strings.Contains(err.Error(), "levels deep") {
		t.Fatalf("deep predicate: %v", err)
	}
	var vals []string
	for i := 0; i < 20; i++ {
		vals = append(vals, "1")
	}
	wide := `{"type":"in","term":{"field-id":1},"values":[` + strings.Join(vals, ",") + `]}`
	e, _ = DecodeIcebergJSON([]byte(wide), s)
	if _, err := Bind(e, s, Limits{MaxDepth: 10, MaxLeaves: 10, MaxLiterals: 10}); err == nil || !strings.Contains(err.Error(), "literals") {
		t.Fatalf("wide predicate: %v", err)
	}
}

// NaN and signed zero: a row is kept when it matches under either engine
// family's semantics.
func TestRowSemanticsCoverIEEEAndTotalOrder(t *testing.T) {
	s := fuzzSchema()
	bind := func(in string) Expr {
		e, err := DecodeIcebergJSON([]byte(in), s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Bind(e, s, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	row := func(f float64) Row {
		return func(int) (value.Value, bool) { return value.OfFloat(f), false }
	}
	null := func(int) (value.Value, bool) { return value.Value{}, true }
	nan := math.NaN()
	cases := []struct {
		pred  string
		row   Row
		ieee  Tri
		total Tri
	}{
		{`{"type":"gt","term":{"field-id":3},"value":1}`, row(nan), False, True},
		{`{"type":"lt","term":{"field-id":3},"value":1}`, row(nan), False, False},
		{`{"type":"not","child":{"type":"lt","term":{"field-id":3},"value":1}}`, row(nan), True, True},
		{`{"type":"not","child":{"type":"gt","term":{"field-id":3},"value":1}}`, row(nan), True, False},
		{`{"type":"eq","term":{"field-id":3},"value":"NaN"}`, row(nan), False, True},
		{`{"type":"not-eq","term":{"field-id":3},"value":2}`, row(nan), True, True},
		{`{"type":"gt","term":{"field-id":3},"value":"-0.0"}`, row(0), False, True},
		{`{"type":"eq","term":{"field-id":3},"value":0}`, row(math.Copysign(0, -1)), True, False},
		{`{"type":"not-nan","term":{"field-id":3}}`, null, Unknown, True},
		{`{"type":"lt","term":{"field-id":3},"value":1}`, null, Unknown, Unknown},
		{`{"type":"is-null","term":{"field-id":3}}`, null, True, True},
	}
	for _, c := range cases {
		e := bind(c.pred)
		if got := Eval(e, c.row, IEEE); got != c.ieee {
			t.Errorf("%s IEEE = %v, want %v", e, got, c.ieee)
		}
		if got := Eval(e, c.row, TotalOrder); got != c.total {
			t.Errorf("%s total order = %v, want %v", e, got, c.total)
		}
	}
}
