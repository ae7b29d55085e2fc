package plan

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
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

// MinPositionRanges is the fewest row ranges a row group's plan ships as
// row_positions (a bitmap) to a client that accepts them: from here on
// the bitmap is the smaller message and the cheaper to read.
const MinPositionRanges = 8

// PositionBytes is s as a portable roaring64 bitmap of its rows
// (RowGroupRef.row_positions).
func PositionBytes(s RowSet) ([]byte, error) {
	bm := roaring64.New()
	// short ranges a row at a time, in order (roaring appends them to its
	// containers); AddRange's per-call work is for long ranges only
	buf := positionRows.Get().(*[]uint64)
	defer positionRows.Put(buf)
	rows := (*buf)[:0]
	for _, r := range s {
		if r.End-r.Start >= 64 {
			bm.AddMany(rows)
			rows = rows[:0]
			bm.AddRange(uint64(r.Start), uint64(r.End))
			continue
		}
		for row := r.Start; row < r.End; row++ {
			rows = append(rows, uint64(row))
		}
	}
	bm.AddMany(rows)
	*buf = rows[:0]
	bm.RunOptimize()
	return bm.ToBytes()
}

// positionRows are PositionBytes' buffers of rows.
var positionRows = sync.Pool{New: func() any { return new([]uint64) }}

// RowSetOfPositions reads a row group's row_positions (rows of a row
// group of n rows) back into a RowSet; positions outside [0, n) or bytes
// that are no bitmap are an error.
func RowSetOfPositions(b []byte, n int64) (RowSet, error) {
	bm, err := rowbits.Decode(b)
	if err != nil {
		return nil, err
	}
	if bm.IsEmpty() {
		return RowSet{}, nil
	}
	if last := bm.Maximum(); last >= uint64(max(n, 0)) {
		return nil, fmt.Errorf("row position %d is past the row group's %d rows", last, n)
	}
	out := make(RowSet, 0, min(bm.GetCardinality(), 1<<16))
	eachPositionBatch(bm, func(batch []uint64) {
		for _, p := range batch {
			row := int64(p)
			if last := len(out) - 1; last >= 0 && out[last].End == row {
				out[last].End++
				continue
			}
			out = append(out, RowRange{row, row + 1})
		}
	})
	return out, nil
}

// eachPositionBatch hands f bm's positions in order, a batch at a time
// (a pooled buffer f must not keep).
func eachPositionBatch(bm *roaring64.Bitmap, f func([]uint64)) {
	buf := positionBatches.Get().(*[]uint64)
	defer positionBatches.Put(buf)
	for it := bm.ManyIterator(); ; {
		k := it.NextMany(*buf)
		if k == 0 {
			return
		}
		f((*buf)[:k])
	}
}
