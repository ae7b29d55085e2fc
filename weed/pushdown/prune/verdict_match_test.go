package prune

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

func TestStringMatchAndArrayLeavesPruneOnlyWhatStatisticsProve(t *testing.T) {
	s := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	leaf := func(id int, op predicate.Op, lit string, neg bool) *predicate.Leaf {
		e, err := predicate.Bind(&predicate.Leaf{FieldID: id, Op: op, Negated: neg, Raw: []iceberg.Literal{iceberg.StringLiteral(lit)}}, s, predicate.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		return e.(*predicate.Leaf)
	}
	bounds := func(lo, hi string) ColumnStats {
		return ColumnStats{HasBounds: true, Lower: value.OfString(lo), Upper: value.OfString(hi), NullsKnown: true, NonNullKnown: true, HasNonNull: true}
	}
	for _, c := range []struct {
		name string
		l    *predicate.Leaf
		s    ColumnStats
		want Verdict
	}{
		{"LIKE prefix below the bounds", leaf(1, predicate.OpLike, "ab%c", false), bounds("b", "c"), CannotMatch},
		{"LIKE prefix inside the bounds", leaf(1, predicate.OpLike, "ab%c", false), bounds("a", "z"), MightMatch},
		{"LIKE without a prefix", leaf(1, predicate.OpLike, "%zzz", false), bounds("a", "b"), MightMatch},
		{"NOT LIKE", leaf(1, predicate.OpLike, "ab%", true), bounds("ab", "ab"), MightMatch},
		{"ILIKE folds case, bounds do not", leaf(1, predicate.OpILike, "AB%", false), bounds("ab", "ac"), MightMatch},
		{"LIKE on an all-NULL column", leaf(1, predicate.OpLike, "%", false), AllNull(), CannotMatch},
		{"array_contains with bounds of another meaning", leaf(2, predicate.OpArrayContains, "gpu", false), bounds("x", "y"), MightMatch},
		{"array_contains knowing nothing", leaf(2, predicate.OpArrayContains, "gpu", false), ColumnStats{}, MightMatch},
		{"NOT array_contains knowing nothing", leaf(2, predicate.OpArrayContains, "gpu", true), ColumnStats{}, MightMatch},
		{"array_contains on lists that are all NULL", leaf(2, predicate.OpArrayContains, "gpu", false), AllNull(), CannotMatch},
	} {
		if got := EvaluateLeaf(c.l, c.s); got != c.want {
			t.Errorf("%s: %s = %v, want %v", c.name, c.l, got, c.want)
		}
	}
}
