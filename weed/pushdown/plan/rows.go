package plan

import (
	"cmp"
	"slices"
	"sort"
)

// RowRange is a half-open range [Start, End) of row positions local to a
// row group.
type RowRange struct{ Start, End int64 }

// RowSet is a sorted list of disjoint, non-adjacent, non-empty ranges.
type RowSet []RowRange

// All is the set [0, n).
func All(n int64) RowSet {
	if n <= 0 {
		return RowSet{}
	}
	return RowSet{{0, n}}
}

// Rows counts the rows in s.
func (s RowSet) Rows() int64 {
	var n int64
	for _, r := range s {
		n += r.End - r.Start
	}
	return n
}

// Covers reports whether s is exactly [0, n).
func (s RowSet) Covers(n int64) bool {
	return len(s) == 1 && s[0].Start <= 0 && s[0].End >= n
}

// normalize sorts and merges ranges (in is not modified).
func normalize(in []RowRange) RowSet {
	rs := in
	for i, r := range in {
		if r.End <= r.Start { // drop empty ranges, into a copy
			rs = append(make([]RowRange, 0, len(in)), in[:i]...)
			for _, r := range in[i+1:] {
				if r.End > r.Start {
					rs = append(rs, r)
				}
			}
			break
		}
	}
	if !slices.IsSortedFunc(rs, byStart) {
		if len(rs) > 0 && &rs[0] == &in[0] {
			rs = slices.Clone(rs)
		}
		slices.SortFunc(rs, byStart)
	}
	out := make(RowSet, 0, len(rs))
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End {
			if r.End > out[n-1].End {
				out[n-1].End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

func byStart(a, b RowRange) int { return cmp.Compare(a.Start, b.Start) }

// Union of two sets.
func Union(a, b RowSet) RowSet {
	return normalize(append(append([]RowRange{}, a...), b...))
}

// Intersect of two sets.
func Intersect(a, b RowSet) RowSet {
	out := RowSet{}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		s := max(a[i].Start, b[j].Start)
		e := min(a[i].End, b[j].End)
		if s < e {
			out = append(out, RowRange{s, e})
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}

// Overlaps reports whether [start, end) intersects s.
func (s RowSet) Overlaps(start, end int64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].End > start })
	return i < len(s) && s[i].Start < end
}
