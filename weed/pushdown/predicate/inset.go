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

// sortedIn is an IN list's literals in ascending order, duplicates
// dropped, with a hash set of them for exact lookups of a value of their
// kind (a value.Value is ~100 bytes: a binary search copying one per
// comparison was half of a 100,000-literal NOT IN on a btree).
type sortedIn struct {
	sorted []value.Value
	ints   map[int64]struct{}  // kind Int (and Bool)
	uints  map[uint64]struct{} // kind Uint
	bytes  map[string]struct{} // kind Bytes
}

// newSortedIn sorts lits when every pair compares (else nil: the linear
// walk is used).
func newSortedIn(lits []value.Value) *sortedIn {
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
	s := &sortedIn{sorted: slices.CompactFunc(out, func(a, b value.Value) bool {
		c, _ := value.Compare(a, b)
		return c == 0
	})}
	switch s.sorted[0].K {
	case value.Int, value.Bool:
		s.ints = make(map[int64]struct{}, len(s.sorted))
		for _, v := range s.sorted {
			s.ints[v.I] = struct{}{}
		}
	case value.Uint:
		s.uints = make(map[uint64]struct{}, len(s.sorted))
		for _, v := range s.sorted {
			s.uints[v.U] = struct{}{}
		}
	case value.Bytes:
		s.bytes = make(map[string]struct{}, len(s.sorted))
		for _, v := range s.sorted {
			s.bytes[string(v.B)] = struct{}{}
		}
	}
	return s
}

// search returns the index of the first literal ≥ v; ok is false when a
// comparison was not ok (the caller then walks the list).
func (s *sortedIn) search(v *value.Value) (i int, ok bool) {
	ok = true
	lo, hi := 0, len(s.sorted)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c, cmpOK := value.Compare(s.sorted[m], *v)
		if !cmpOK {
			return 0, false
		}
		if c < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, ok
}

// contains reports whether v equals a literal; ok as for search.
func (s *sortedIn) contains(v *value.Value) (found, ok bool) {
	switch {
	case s.ints != nil && v.K == s.sorted[0].K:
		_, found = s.ints[v.I]
		return found, true
	case s.uints != nil && v.K == value.Uint:
		_, found = s.uints[v.U]
		return found, true
	case s.bytes != nil && v.K == value.Bytes:
		_, found = s.bytes[string(v.B)]
		return found, true
	}
	i, ok := s.search(v)
	if !ok || i == len(s.sorted) {
		return false, ok
	}
	c, cmpOK := value.Compare(s.sorted[i], *v)
	return cmpOK && c == 0, cmpOK
}

// AnyWithin reports whether some literal of an IN leaf lies in [lo, hi]
// (bounds of a row group or page), in O(log n) for a sorted list; handled
// is false when the caller must walk the literals itself.
func (l *Leaf) AnyWithin(lo, hi value.Value) (within, handled bool) {
	if l.in == nil || l.Op != OpIn {
		return false, false
	}
	i, ok := l.in.search(&lo)
	if !ok {
		return false, false
	}
	if i == len(l.in.sorted) {
		return false, true
	}
	c, ok := value.Compare(l.in.sorted[i], hi)
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
	return l.in.contains(&v)
}
