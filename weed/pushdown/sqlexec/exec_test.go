package sqlexec

import (
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// The WHERE is parsed once, with the statement: the connector's query
// carries that parse (its clause), for a statement and for a prepared one
// once its parameters are bound.
func TestTheWhereParsedWithTheStatementIsHandedToTheConnector(t *testing.T) {
	st, err := sqlstmt.Parse(`SELECT id FROM demo.events WHERE status = 'error' AND id > 10`)
	if err != nil {
		t.Fatal(err)
	}
	q := query(st, Options{})
	if q.Clause == nil || q.Clause != mustClause(t, st) || q.Clause.Text != st.Where || q.Where != "(status = 'error') AND (id > 10)" {
		t.Fatalf("query clause %+v, where %q", q.Clause, q.Where)
	}
	prep, err := sqlstmt.Parse(`SELECT id FROM demo.events WHERE id = ?`)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := prep.Bind([]any{int64(7)})
	if err != nil {
		t.Fatal(err)
	}
	if q := query(bound, Options{}); q.Clause == nil || q.Clause.Text != "id = 7" {
		t.Fatalf("bound statement's clause %+v", q.Clause)
	}
	none, err := sqlstmt.Parse(`SELECT id FROM demo.events`)
	if err != nil {
		t.Fatal(err)
	}
	if q := query(none, Options{}); !q.Clause.Empty() || q.Where != "" {
		t.Fatalf("no WHERE handed on clause %+v", q.Clause)
	}
}

func mustClause(t *testing.T, st *sqlstmt.Statement) *sqlpred.Clause {
	t.Helper()
	c, err := st.WhereClause()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
