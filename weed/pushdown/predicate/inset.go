package predicate

import (
	"slices"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// An IN list of many literals is kept sorted once, at Bind, so that a row,
// a row group's bounds or an index key meets it in O(log n) comparisons
// instead of n: a NOT IN of 10,000 ids evaluated on every distinct key of a
// btree (125,000 a file) was 1.25 billion comparisons a file.
//
//	Bind(IN lits) ─▶ n ≥ minSortedIn and every pair comparable (no floats:
//	                 NaN and signed zeros compare differently per semantics)
//	             ─▶ sorted, duplicates dropped ─▶ Leaf.in
//	evalLeaf / prune: binary search; any comparison that is not ok falls
//	                  back to the linear walk, which is the definition

// minSortedIn is the literal count from which an IN list is sorted.
const minSortedIn = 16

// sortedIn is an IN list's literals in ascending order, duplicates dropped.
type sortedIn []value.Value

// newSortedIn sorts lits when every pair compares (else nil: the linear
// walk is used).
func newSortedIn(lits []value.Value) sortedIn {
	if len(lits) < minSortedIn {
		return nil
	}
	out := slices.Clone(lits)
	for _, v := range out {
		if v.K == value.Float || v.K != out[0].K {
			return nil
		}
	}
	ok := true
	slices.SortFunc(out, func(a, b value.Value) int {
		c, cmpOK := value.Compare(a, b)
		ok = ok && cmpOK
		return c
	})
	if !ok {
		return nil
	}
	return slices.CompactFunc(out, func(a, b value.Value) bool {
		c, _ := value.Compare(a, b)
		return c == 0
	})
}

// search returns the index of the first literal ≥ v; ok is false when a
// comparison was not ok (the caller then walks the list).
func (s sortedIn) search(v value.Value) (i int, ok bool) {
	ok = true
	i, _ = slices.BinarySearchFunc(s, v, func(lit, target value.Value) int {
		c, cmpOK := value.Compare(lit, target)
		ok = ok && cmpOK
		return c
	})
	return i, ok
}

// contains reports whether v equals a literal; ok as for search.
func (s sortedIn) contains(v value.Value) (found, ok bool) {
	i, ok := s.search(v)
	if !ok || i == len(s) {
		return false, ok
	}
	c, cmpOK := value.Compare(s[i], v)
	return cmpOK && c == 0, cmpOK
}

// AnyWithin reports whether some literal of an IN leaf lies in [lo, hi]
// (bounds of a row group or page), in O(log n) for a sorted list; handled
// is false when the caller must walk the literals itself.
func (l *Leaf) AnyWithin(lo, hi value.Value) (within, handled bool) {
	if l.in == nil || l.Op != OpIn {
		return false, false
	}
	i, ok := l.in.search(lo)
	if !ok {
		return false, false
	}
	if i == len(l.in) {
		return false, true
	}
	c, ok := value.Compare(l.in[i], hi)
	if !ok {
		return false, false
	}
	return c <= 0, true
}

// HasLiteral reports whether an IN leaf's literals hold v, in O(log n) for
// a sorted list; handled is false when the caller must walk them itself.
func (l *Leaf) HasLiteral(v value.Value) (found, handled bool) {
	if l.in == nil || l.Op != OpIn {
		return false, false
	}
	return l.in.contains(v)
}
