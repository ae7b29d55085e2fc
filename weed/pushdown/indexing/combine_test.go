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

func TestAnAnswerIsExactOnlyWhenEveryLeafWasAnsweredExactly(t *testing.T) {
	a, b, c, u := &predicate.Leaf{FieldID: 1}, &predicate.Leaf{FieldID: 2}, &predicate.Leaf{FieldID: 4}, &predicate.Leaf{FieldID: 3}
	answers := map[*predicate.Leaf]Answer{
		a: {Positions: roaring64.BitmapOf(1, 2, 3), Exact: true},
		b: {Positions: roaring64.BitmapOf(3, 4), Exact: true},
		c: {Positions: roaring64.BitmapOf(2, 3)},
		u: {Unknown: true},
	}
	ans := func(l *predicate.Leaf) Answer { return answers[l] }
	and := func(k ...predicate.Expr) predicate.Expr { return predicate.And{Kids: k} }
	or := func(k ...predicate.Expr) predicate.Expr { return predicate.Or{Kids: k} }
	for _, tc := range []struct {
		name         string
		e            predicate.Expr
		known, exact bool
	}{
		{"a", a, true, true},
		{"candidate c", c, true, false},
		{"a AND b", and(a, b), true, true},
		{"a AND c", and(a, c), true, false},
		{"a AND unknown", and(a, u), true, false},
		{"a OR b", or(a, b), true, true},
		{"a OR c", or(a, c), true, false},
		{"a OR unknown", or(a, u), false, false},
		{"(a OR b) AND FALSE", and(or(a, b), predicate.Const{Value: false}), true, true},
		{"TRUE", predicate.Const{Value: true}, false, false},
		{"residual", predicate.Residual{Reason: "x"}, false, false},
	} {
		got := CombineExact(tc.e, ans)
		if got.Unknown == tc.known || got.Exact != tc.exact {
			t.Fatalf("%s: known %v exact %v, want known %v exact %v", tc.name, !got.Unknown, got.Exact, tc.known, tc.exact)
		}
	}
}
