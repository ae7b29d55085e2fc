package connector

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

// A query's predicate is parsed and bound once per schema of a metadata
// version: the same WHERE under the same schema is served what was bound;
// another schema (the table's type of x changed) binds it anew; a WHERE
// that does not bind is refused every time.
func TestAWherePredicateIsBoundOncePerSchema(t *testing.T) {
	te := &tableEntry{wheres: newLRU[whereKey, *boundWhere](4)}
	v1 := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	v2 := iceberg.NewSchema(2, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true})
	a, err := te.boundWhere("x = 7", nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := te.boundWhere("x = 7", nil, v1); err != nil || b != a {
		t.Fatalf("the same WHERE under the same schema was bound again (%v)", err)
	}
	if a.wire == nil || a.expr.(*predicate.Leaf).Type != iceberg.PrimitiveTypes.Int64 {
		t.Fatalf("x = 7 under schema 1: wire %d bytes, residual %v", len(a.wire), a.expr)
	}
	c, err := te.boundWhere("x = 7", nil, v2)
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c.expr.(*predicate.Leaf).Type != iceberg.PrimitiveTypes.Float64 {
		t.Fatalf("x = 7 under schema 2 is served schema 1's binding (%v)", c.expr)
	}
	for i := 0; i < 2; i++ {
		if _, err := te.boundWhere("y = 1", nil, v1); err == nil {
			t.Fatalf("a WHERE on a column the schema lacks bound (call %d)", i+1)
		}
	}
	if te.wheres.Len() != 2 {
		t.Errorf("%d bound predicates kept, want 2", te.wheres.Len())
	}
}

// A predicate handed on already parsed (a SELECT's WHERE) is bound from its
// syntax tree: the query's Where text is not parsed again (here it is not
// even SQL), and the binding is cached under the clause's text.
func TestAParsedClauseIsBoundWithoutParsingTheWhereAgain(t *testing.T) {
	te := &tableEntry{wheres: newLRU[whereKey, *boundWhere](4)}
	s := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	clause, err := sqlpred.ParseClause("X >= 3")
	if err != nil {
		t.Fatal(err)
	}
	w, err := te.boundWhere("not ( sql", clause, s)
	if err != nil {
		t.Fatalf("the parsed clause was not used: %v", err)
	}
	leaf, ok := w.expr.(*predicate.Leaf)
	if !ok || leaf.FieldID != 1 || leaf.Op != predicate.OpGtEq {
		t.Fatalf("X >= 3 bound as %v", w.expr)
	}
	if again, err := te.boundWhere("", nil, s); err != nil || again == w {
		t.Fatalf("no WHERE was served the clause's binding (%v)", err)
	}
	if cached, err := te.boundWhere("X >= 3", nil, s); err != nil || cached != w {
		t.Fatalf("the clause's binding is not cached under its text (%v)", err)
	}
}
