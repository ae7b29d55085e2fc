package sqlstmt

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

// canonicalIn is st with its columns spelled as schema spells them.
func canonicalIn(st *Statement, schema *iceberg.Schema) (*Statement, error) {
	return st.Canonical(func(name string) (string, error) { return sqlpred.ResolveName(schema, name) })
}

func TestAnAggregateQueryParsesItsGroupsAliasesHavingOrderAndLimit(t *testing.T) {
	st, err := Parse(`SELECT tenant_id AS t, status, COUNT(*) AS n, COUNT(DISTINCT message), SUM(id), MIN(ts), MAX(id), AVG(id)
		FROM demo.events WHERE id > 10 GROUP BY tenant_id, status HAVING COUNT(*) > 5 AND MIN(id) >= 0
		ORDER BY n DESC NULLS LAST, 1, status LIMIT 10 OFFSET 2`)
	if err != nil {
		t.Fatal(err)
	}
	if st.Table != "demo.events" || !st.Aggregate || st.Where != "id > 10" || st.Limit != 10 || !st.HasLimit || st.Offset != 2 {
		t.Fatalf("%+v", st)
	}
	var names []string
	for _, it := range st.Items {
		names = append(names, it.Name)
	}
	want := "t status n count(DISTINCT message) sum(id) min(ts) max(id) avg(id) min(id)"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("items %q, want %q", got, want)
	}
	if !st.Items[len(st.Items)-1].Hidden {
		t.Fatal("MIN(id) of HAVING should be a hidden item")
	}
	if len(st.Orders) != 3 || st.Orders[0] != (Order{Item: 2, Desc: true}) || st.Orders[1] != (Order{Item: 0}) || st.Orders[2] != (Order{Item: 1}) {
		t.Fatalf("orders %+v", st.Orders)
	}
}

func TestUnsupportedSQLIsRefusedNamingTheConstruct(t *testing.T) {
	for sql, want := range map[string]string{
		`SELECT id + 1 FROM ns.t`:                                        `select item "id + 1"`,
		`SELECT stddev(id) FROM ns.t`:                                    `function "stddev"`,
		`SELECT SUM(DISTINCT id) FROM ns.t`:                              `SUM(DISTINCT …)`,
		`SELECT DISTINCT id FROM ns.t`:                                   `SELECT DISTINCT`,
		`SELECT a.id FROM ns.t a JOIN ns.u b ON a.id = b.id`:             `joins`,
		`SELECT id FROM ns.t UNION SELECT id FROM ns.u`:                  `UNION`,
		`SELECT tenant_id, COUNT(*) FROM ns.t`:                           `must appear in GROUP BY`,
		`SELECT COUNT(*) FROM ns.t GROUP BY lower(x)`:                    `GROUP BY "lower(x)"`,
		`SELECT id FROM ns.t HAVING COUNT(*) > 1`:                        `HAVING needs aggregates`,
		`SELECT COUNT(*) FROM ns.t HAVING COUNT(*) IN (1, 2)`:            `operator IN in HAVING`,
		`SELECT id FROM ns.t ORDER BY id + 1`:                            `ORDER BY "id + 1"`,
		`SELECT id FROM ns.t ORDER BY 3`:                                 `not an output column position`,
		`SELECT COUNT(*) FILTER (WHERE id > 1) FROM ns.t`:                `FILTER`,
		`SELECT row_number() OVER () FROM ns.t`:                          `window function`,
		`INSERT INTO ns.t VALUES (1)`:                                    `INSERT`,
		`SELECT * FROM ns.t ORDER BY id`:                                 `ORDER BY with SELECT *`,
		`SELECT COUNT(*) FROM ns.t ORDER BY embedding <-> '[1]' LIMIT 3`: `vector distance with aggregates`,
	} {
		_, err := Parse(sql)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", sql, err, want)
		}
	}
}

func TestParametersAreBoundAsLiteralsInPlaceOfDollarOrQuestionMarks(t *testing.T) {
	st, err := Parse(`SELECT status, COUNT(*) FROM demo.events WHERE tenant_id = ? AND id < ? GROUP BY status HAVING COUNT(*) > ?`)
	if err != nil {
		t.Fatal(err)
	}
	if st.Params != 3 {
		t.Fatalf("params %d", st.Params)
	}
	b, err := st.Bind([]any{"it's", int64(100), 2})
	if err != nil {
		t.Fatal(err)
	}
	if b.Where != `(tenant_id = e'it\'s') AND (id < 100)` && b.Where != `(tenant_id = 'it''s') AND (id < 100)` {
		t.Fatalf("where %q", b.Where)
	}
	if b.Having == nil {
		t.Fatal("HAVING lost")
	}
	if _, err := st.Bind([]any{"x"}); err == nil || !strings.Contains(err.Error(), "takes 3 parameters, 1 given") {
		t.Fatalf("%v", err)
	}
	st, err = Parse(`SELECT id FROM demo.events WHERE message = '?' AND id = $1`)
	if err != nil || st.Params != 1 {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestAVectorQueryParsesItsOrderAndLimit(t *testing.T) {
	st, err := Parse(`SELECT id, _distance FROM demo.events WHERE tenant_id = 'a' ORDER BY embedding <=> '[0.1, 0.2]' LIMIT 5`)
	if err != nil || st.Vector == nil || st.Vector.Column != "embedding" || st.Limit != 5 || len(st.Orders) != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	for sql, want := range map[string]string{
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]'`:                  "needs LIMIT k (1 to 10000)",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' LIMIT 0`:          "want 1 to 10000",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' DESC LIMIT 3`:     "ascending",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]', id LIMIT 3`:      "takes no other ORDER BY terms",
		`SELECT id FROM demo.events ORDER BY embedding <-> '[1]' LIMIT 3 OFFSET 2`: "OFFSET is not supported",
	} {
		_, err := Parse(sql)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", sql, err, want)
		}
	}
}
