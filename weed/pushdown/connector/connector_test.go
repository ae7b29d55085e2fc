package connector

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// A query's predicate is parsed and bound once per schema of a metadata
// version: the same WHERE under the same schema is served what was bound;
// another schema (the table's type of x changed) binds it anew; a WHERE
// that does not bind is refused every time.
func TestAWherePredicateIsBoundOncePerSchema(t *testing.T) {
	te := &tableEntry{wheres: newLRU[whereKey, *boundWhere](4)}
	v1 := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	v2 := iceberg.NewSchema(2, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true})
	a, err := te.boundWhere("x = 7", v1)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := te.boundWhere("x = 7", v1); err != nil || b != a {
		t.Fatalf("the same WHERE under the same schema was bound again (%v)", err)
	}
	if a.wire == nil || a.expr.(*predicate.Leaf).Type != iceberg.PrimitiveTypes.Int64 {
		t.Fatalf("x = 7 under schema 1: wire %d bytes, residual %v", len(a.wire), a.expr)
	}
	c, err := te.boundWhere("x = 7", v2)
	if err != nil {
		t.Fatal(err)
	}
	if c == a || c.expr.(*predicate.Leaf).Type != iceberg.PrimitiveTypes.Float64 {
		t.Fatalf("x = 7 under schema 2 is served schema 1's binding (%v)", c.expr)
	}
	for i := 0; i < 2; i++ {
		if _, err := te.boundWhere("y = 1", v1); err == nil {
			t.Fatalf("a WHERE on a column the schema lacks bound (call %d)", i+1)
		}
	}
	if te.wheres.Len() != 2 {
		t.Errorf("%d bound predicates kept, want 2", te.wheres.Len())
	}
}
