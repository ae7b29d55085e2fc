package sqlpred

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

func testSchema() *iceberg.Schema {
	return iceberg.NewSchema(3,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 3, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 8, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 9, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 10, Name: "zip", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 11, Name: "tags", Type: &iceberg.ListType{ElementID: 12, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 13, Name: "codes", Type: &iceberg.ListType{ElementID: 14, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: true}},
	)
}

// Every SQL form travels SQL → iceberg-go → Substrait bytes → our decoder →
// binding, and comes out as the expected field-id predicate.
func TestSQLTravelsThroughSubstraitToFieldIDPredicates(t *testing.T) {
	s := testSchema()
	cases := map[string]string{
		"id = 42":                                    "id#1 = 42",
		"42 < id":                                    "id#1 > 42",
		"id != 7":                                    "id#1 != 7",
		"tenant_id IN ('a', 'b')":                    `tenant_id#3 IN ("a", "b")`,
		"tenant_id NOT IN ('a')":                     `tenant_id#3 != "a"`,
		"id BETWEEN 10 AND 20":                       "(id#1 >= 10 AND id#1 <= 20)",
		"ts >= TIMESTAMP '2026-01-01 00:00:00'":      "ts#2 >= 1767225600000000",
		"tenant_id IS NULL OR score IS NOT NULL":     "(tenant_id#3 IS NULL OR score#4 IS NOT NULL)",
		"isnan(score)":                               "score#4 IS NAN",
		"tenant_id LIKE 'tenant-0%'":                 `STARTS_WITH(tenant_id#3, "tenant-0")`,
		"NOT (id < 5)":                               "NOT (id#1 < 5)",
		"amount > 12.50":                             "amount#5 > 12.50",
		"day = DATE '2026-01-02'":                    "day#6 = 20455",
		"ok = true AND small <= -3":                  "(ok#7 = true AND small#8 <= -3)",
		"addr.zip = '10115'":                         `addr.zip#10 = "10115"`,
		"score > 1.5e3":                              "score#4 > 1500",
		"TENANT_ID = 'x'":                            `tenant_id#3 = "x"`,
		"id NOT BETWEEN 1 AND 2":                     "(NOT (id#1 >= 1) OR NOT (id#1 <= 2))",
		"starts_with(tenant_id, 'ab') AND id IN (1)": `(STARTS_WITH(tenant_id#3, "ab") AND id#1 = 1)`,
		"tenant_id LIKE '%timeout%'":                 `tenant_id#3 LIKE "%timeout%"`,
		"tenant_id NOT LIKE 'a_c'":                   `tenant_id#3 NOT LIKE "a_c"`,
		"tenant_id ILIKE 'Zür%'":                     `tenant_id#3 ILIKE 0x5ac3bc7225`,
		"addr.zip NOT ILIKE '%9'":                    `addr.zip#10 NOT ILIKE "%9"`,
		"array_contains(tags, 'gpu')":                `ARRAY_CONTAINS(tags#11, "gpu")`,
		"'gpu' = ANY(tags) AND id = 1":               `(ARRAY_CONTAINS(tags#11, "gpu") AND id#1 = 1)`,
		"NOT array_contains(codes, 7) OR id = 2":     `(NOT ARRAY_CONTAINS(codes#13, 7) OR id#1 = 2)`,
		"array_contains(tags, NULL)":                 "FALSE",
	}
	for sql, want := range cases {
		b, err := Encode(sql, s)
		if err != nil {
			t.Errorf("%s: encode: %v", sql, err)
			continue
		}
		raw, err := predicate.DecodeSubstrait(b, s)
		if err != nil {
			t.Errorf("%s: decode: %v", sql, err)
			continue
		}
		e, err := predicate.Bind(raw, s, predicate.DefaultLimits)
		if err != nil {
			t.Errorf("%s: bind: %v", sql, err)
			continue
		}
		if got := e.String(); got != want {
			t.Errorf("%s:\n got  %s\n want %s", sql, got, want)
		}
	}
}

func TestSQLErrorsSayWhatIsSupported(t *testing.T) {
	s := testSchema()
	for sql, want := range map[string]string{
		"id + 1 = 3":             "not supported",
		"tenant_id LIKE id":      "non-string pattern",
		"id LIKE '%x'":           "not string",
		"array_contains(id, 1)":  "not a list",
		"id > ANY(tags)":         "ANY with an operator other than =",
		"nosuch = 1":             `no column "nosuch"; the table's columns are: id, ts, tenant_id, score, amount, day, ok, small, addr, tags, codes, addr.zip`,
		"id = 'abc'":             "column id is long, and the string 'abc' is not a long value; write a number (no quotes)",
		"SELECT":                 "WHERE clause",
		"lower(tenant_id) = 'a'": "function lower",
	} {
		_, err := Encode(sql, s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", sql, err, want)
		}
	}
}

// A literal that is not a value of its column's type is refused naming the
// column, its type and how to write a value; a date compared with a
// timestamp is that day's midnight.
func TestALiteralOfTheWrongTypeNamesTheColumnAndADateIsMidnightForATimestamp(t *testing.T) {
	s := testSchema()
	for sql, want := range map[string]string{
		"tenant_id = 5":            "column tenant_id is string, and the number 5 is not a string value; quote it: '5'",
		"tenant_id IN ('a', 7)":    "column tenant_id is string, and the number 7 is not a string value; quote it: '7'",
		"ts >= 'yesterday'":        "column ts is timestamp, and the string 'yesterday' is not a timestamp value; write TIMESTAMP 'YYYY-MM-DD HH:MM:SS' (or DATE 'YYYY-MM-DD' for midnight)",
		"score BETWEEN 1 AND 'x'":  "column score is double, and the string 'x' is not a double value; write a number (no quotes)",
		"ok = 'maybe'":             "column ok is boolean, and the string 'maybe' is not a boolean value; write TRUE or FALSE",
		"day = DATE '2026-02-30x'": "column day is date, and the string '2026-02-30x' is not a date value; write DATE 'YYYY-MM-DD'",
		"nosuch.zip = 'a'":         `no column "nosuch.zip"`,
	} {
		_, err := Encode(sql, s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", sql, err, want)
		}
	}
	for sql, want := range map[string]string{
		"ts >= DATE '2026-01-01'":                       "ts#2 >= 1767225600000000",
		"ts < '2026-01-02'":                             "ts#2 < 1767312000000000",
		"ts BETWEEN DATE '2026-01-01' AND '2026-01-02'": "(ts#2 >= 1767225600000000 AND ts#2 <= 1767312000000000)",
	} {
		b, err := Encode(sql, s)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		raw, err := predicate.DecodeSubstrait(b, s)
		if err != nil {
			t.Fatal(err)
		}
		e, err := predicate.Bind(raw, s, predicate.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.String(); got != want {
			t.Errorf("%s: got %s, want %s", sql, got, want)
		}
	}
}

func TestColumnsResolveNamesCaseInsensitively(t *testing.T) {
	ids, err := Columns("ID, Tenant_Id", testSchema())
	if err != nil || len(ids) != 2 || ids[0] != 1 || ids[1] != 3 {
		t.Fatalf("Columns = %v, %v", ids, err)
	}
	if _, err := Columns("id, nope", testSchema()); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown column: %v", err)
	}
}

// A table with both user_id (long) and uSeR_Id (string), like the
// case_sensitive_names fixture.
func caseCollidingSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "uSeR_Id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "CamelCol", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "Addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "Zip", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
}

func TestNamesBindToTheExactSpellingFirstThenTheOnlyCaseInsensitiveMatch(t *testing.T) {
	sc := caseCollidingSchema()
	for _, c := range []struct {
		where string
		id    int
	}{
		{`user_id >= 2`, 1},      // unquoted folds to user_id: exact
		{`"user_id" >= 2`, 1},    // exact
		{`"uSeR_Id" IS NULL`, 2}, // exact, quoted
		{`CamelCol = 3`, 3},      // folded to camelcol, the only match ignoring case
		{`"CAMELCOL" = 3`, 3},
		{`addr.zip = 'x'`, 5}, // nested, the only match ignoring case
	} {
		b, err := Bind(c.where, sc)
		if err != nil {
			t.Errorf("Bind(%s): %v", c.where, err)
			continue
		}
		p, ok := b.(iceberg.BoundPredicate)
		if !ok || p.Ref().Field().ID != c.id {
			t.Errorf("Bind(%s) = %v, want a predicate on field %d", c.where, b, c.id)
		}
		u, err := ParseFor(c.where, sc)
		if err != nil {
			t.Errorf("ParseFor(%s): %v", c.where, err)
			continue
		}
		if _, err := iceberg.BindExpr(sc, u, true); err != nil {
			t.Errorf("ParseFor(%s) does not bind case-sensitively: %v", c.where, err)
		}
	}
	_, err := Bind(`"USER_ID" = 1`, sc)
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), `"uSeR_Id", "user_id"`) {
		t.Fatalf(`Bind("USER_ID" = 1) = %v, want an ambiguity error naming both columns`, err)
	}
	if _, err := Bind(`nope = 1`, sc); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown column: %v", err)
	}
	if _, err := Columns(`"USER_ID"`, sc); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("Columns with an ambiguous name: %v", err)
	}
	if ids, err := Columns(`uSeR_Id, user_id`, sc); err != nil || len(ids) != 2 || ids[0] != 2 || ids[1] != 1 {
		t.Fatalf("Columns exact = %v, %v", ids, err)
	}
}

func TestAWhereClauseWithANulByteIsRefusedNotCutThere(t *testing.T) {
	// The parser's lexer stops at a NUL: "x = 1" alone would be a
	// different predicate from the one sent.
	_, err := ParseClause("x = 1\x00 AND y = 2")
	if err == nil || !strings.Contains(err.Error(), "NUL byte at offset 5") {
		t.Fatalf("err = %v, want the NUL named", err)
	}
}

func TestParserErrorsQuoteABoundedPieceOfTheClause(t *testing.T) {
	long := strings.Repeat("é", 50000)
	for _, where := range []string{"x = '" + long + "' AND", long + " LIKE", "x IN (" + strings.Repeat("1,", 50000) + "))"} {
		_, err := ParseClause(where)
		if err == nil {
			t.Fatalf("%.40q: accepted", where)
		}
		if len(err.Error()) > 600 || !utf8.ValidString(err.Error()) {
			t.Errorf("%.40q: error of %d bytes (valid UTF-8: %v): %.200s", where, len(err.Error()), utf8.ValidString(err.Error()), err.Error())
		}
	}
}
