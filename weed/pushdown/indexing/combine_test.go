package indexing

import (
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

func TestUnknownIsTheIdentityUnderAndAndAbsorbingUnderOr(t *testing.T) {
	a, b, u := &predicate.Leaf{FieldID: 1}, &predicate.Leaf{FieldID: 2}, &predicate.Leaf{FieldID: 3}
	answers := map[*predicate.Leaf]Answer{
		a: {Positions: roaring64.BitmapOf(1, 2, 3)},
		b: {Positions: roaring64.BitmapOf(3, 4)},
		u: {Unknown: true},
	}
	ans := func(l *predicate.Leaf) Answer { return answers[l] }
	for _, tc := range []struct {
		name  string
		e     predicate.Expr
		known bool
		want  []uint64
	}{
		{"a", a, true, []uint64{1, 2, 3}},
		{"unknown", u, false, nil},
		{"a AND b", predicate.And{Kids: []predicate.Expr{a, b}}, true, []uint64{3}},
		{"a AND unknown", predicate.And{Kids: []predicate.Expr{a, u}}, true, []uint64{1, 2, 3}},
		{"unknown AND unknown", predicate.And{Kids: []predicate.Expr{u, u}}, false, nil},
		{"a OR b", predicate.Or{Kids: []predicate.Expr{a, b}}, true, []uint64{1, 2, 3, 4}},
		{"a OR unknown", predicate.Or{Kids: []predicate.Expr{a, u}}, false, nil},
		{"(a OR b) AND (b OR unknown)", predicate.And{Kids: []predicate.Expr{predicate.Or{Kids: []predicate.Expr{a, b}}, predicate.Or{Kids: []predicate.Expr{b, u}}}}, true, []uint64{1, 2, 3, 4}},
		{"FALSE", predicate.Const{Value: false}, true, nil},
		{"TRUE", predicate.Const{Value: true}, false, nil},
	} {
		got, known := Combine(tc.e, ans)
		if known != tc.known {
			t.Fatalf("%s: known = %v, want %v", tc.name, known, tc.known)
		}
		if known && !got.Equals(roaring64.BitmapOf(tc.want...)) {
			t.Fatalf("%s = %v, want %v", tc.name, got.ToArray(), tc.want)
		}
	}
	if answers[a].Positions.GetCardinality() != 3 {
		t.Fatalf("Combine modified a leaf's answer")
	}
}
