package predicate_test

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// A request's predicate is decoded once per schema for the same bytes: the
// same schema gets the same bound predicate again; another schema (another
// metadata version, where field 1 is a string) binds it anew, to its own
// type; a predicate that does not bind is refused every time, never cached.
func TestAPredicateIsDecodedOncePerSchemaAndRefusalsAreNotKept(t *testing.T) {
	c := predicate.NewDecodeCache(1 << 20)
	v1 := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	v2 := iceberg.NewSchema(2, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.String, Required: true})
	bound, err := iceberg.BindExpr(v1, iceberg.EqualTo(iceberg.Reference("x"), int64(7)), true)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := predicate.EncodeSubstrait(v1, bound)
	if err != nil {
		t.Fatal(err)
	}
	req := &pushdown_pb.ParquetPushdownRequest{Predicate: wire, PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT}
	a, err := c.Decode(req.PredicateKind, req.Predicate, v1, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Decode(req.PredicateKind, req.Predicate, v1, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("the same bytes under the same schema were decoded again: %v, %v", a, b)
	}
	leaf, ok := a.(*predicate.Leaf)
	if !ok || !leaf.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Fatalf("under schema 1 the predicate binds to %#v, want a leaf on a long", a)
	}
	for i := 0; i < 2; i++ {
		if e, err := c.Decode(req.PredicateKind, req.Predicate, v2, predicate.DefaultLimits); err == nil {
			if l, ok := e.(*predicate.Leaf); !ok || !l.Type.Equals(iceberg.PrimitiveTypes.String) {
				t.Fatalf("under schema 2 the predicate binds to %v, want a leaf on a string (or a refusal)", e)
			}
		}
	}
	if c.Len() > 2 {
		t.Errorf("%d predicates kept, want at most one per schema", c.Len())
	}
	bad := &pushdown_pb.ParquetPushdownRequest{Predicate: []byte("not substrait"), PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT}
	for i := 0; i < 2; i++ {
		if _, err := c.Decode(bad.PredicateKind, bad.Predicate, v1, predicate.DefaultLimits); err == nil {
			t.Fatalf("bytes that are not Substrait decoded (call %d)", i+1)
		}
	}
	if c.Len() > 2 {
		t.Error("a refused predicate was kept")
	}
}

// The cache is bounded by what its predicates hold, not their count: large
// predicates (an IN list of 2,000 strings, ~40 KB of Substrait, ~1 MiB
// decoded) fill it after a few, however many distinct ones arrive.
func TestDecodedPredicatesKeptAreBoundedByTheirEstimatedBytes(t *testing.T) {
	const capacity = 8 << 20
	c := predicate.NewDecodeCache(capacity)
	s := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String})
	kept := 0
	for i := 0; i < 50; i++ {
		lits := make([]string, 2000)
		for j := range lits {
			lits[j] = fmt.Sprintf("v%d-%08d", i, j)
		}
		bound, err := iceberg.BindExpr(s, iceberg.IsIn(iceberg.Reference("s"), lits...), true)
		if err != nil {
			t.Fatal(err)
		}
		wire, err := predicate.EncodeSubstrait(s, bound)
		if err != nil {
			t.Fatal(err)
		}
		if len(wire) > predicate.MaxCachedPredicate {
			t.Fatalf("the test's predicate is %d bytes: over the cacheable %d", len(wire), predicate.MaxCachedPredicate)
		}
		if _, err := c.Decode(pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT, wire, s, predicate.DefaultLimits); err != nil {
			t.Fatal(err)
		}
		kept = c.Len()
	}
	if kept < 1 || kept > 10 {
		t.Fatalf("%d large predicates kept in %d bytes, want a few (1 to 10)", kept, capacity)
	}
}
