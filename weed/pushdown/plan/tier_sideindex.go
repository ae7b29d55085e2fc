package plan

import (
	"context"
	"math/bits"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// TierSideIndex narrows by side indexes (weed/pushdown/indexing): the
// volume pushdown services holding the payloads answer the predicate's
// leaves with row positions, combined per file (AND ∩, OR ∪, unknown =
// identity under AND, absorbing under OR).
const TierSideIndex = "side_index"

// SideIndexSource answers the predicate from side indexes.
type SideIndexSource interface {
	// Select returns, index-aligned with files, the file-absolute row
	// positions that might match (nil: the indexes say nothing of that
	// file), and notes of what was used and what was missing. With
	// first > 0 (a LIMIT's plan) an exact answer may be cut to its first
	// `first` positions, notes.Cut saying which were: rows after the last
	// of them were not answered.
	Select(ctx context.Context, files []*DataFile, first int64) ([]*roaring64.Bitmap, SideIndexNotes, error)
}

// SideIndexNotes say which indexes answered and which could not.
type SideIndexNotes struct {
	// Used and Missing are per file, index-aligned with the files asked.
	Used, Missing [][]string
	// Exact, index-aligned with the files asked, says the file's positions
	// are exactly its rows matching the whole predicate (every leaf
	// answered exactly; see indexing.CombineExact); nil: none are.
	Exact []bool
	// Cut, index-aligned with the files asked, says the file's exact
	// positions are only the first ones asked for; nil: none are.
	Cut []bool
	// Skipped, index-aligned with the files asked, says the file's indexes
	// were not asked: the files before it held the first positions asked
	// for (first > 0); nil: none were.
	Skipped []bool
}

// MinSideIndexGap is the shortest run of non-matching rows that splits a
// planned row range (shorter gaps stay inside it: the residual drops
// them), so row ranges stay few.
const MinSideIndexGap = 64

// PruneBySideIndex narrows a row group's plan to the rows that might match
// (positions, file-absolute): a row group none of whose planned rows might
// match is skipped; runs of at least MinSideIndexGap rows that cannot
// match are cut out of the planned ranges. It only ever narrows.
func PruneBySideIndex(rgp *RowGroupAccess, positions *roaring64.Bitmap, first, n int64) {
	pruneBySideIndex(rgp, positions, first, n, false, nil)
}

// MaxExactRanges bounds the row ranges of a file planned exactly
// (positions the whole predicate's exact answer): a row group that would
// take the file past it has its ranges merged across gaps shorter than
// MinSideIndexGap as for candidates, the reader then evaluating the
// predicate. Scattered rows cost a range each
// in the plan: an unselective answer (status = 'error', 20% of the rows
// interleaved: 6,500 ranges a 32,768-row group) made plans of 200,000
// ranges that took longer to send and walk than evaluating the predicate.
// Sent as row positions (a bitmap, rows.go) they cost a few bytes each:
// 8,192 holds a 1% tenant's rows of a 125,000-row file twice over, whose
// last row group a budget of 4,096 left to be decoded and filtered whole.
const MaxExactRanges = 1 << 13

// exactRangeShare bounds a row group's exact ranges to one per
// exactRangeShare of its rows: an answer more scattered than that (status
// = 'error', a fifth of the rows interleaved: a range per 5 rows) is
// planned as candidates, which the reader filters with one vectorized
// comparison faster than it applies thousands of ranges, and which cost
// the planner a range walk, not a bitmap per row group (planned exactly,
// the peer benchmark's status equality took 15% longer).
const exactRangeShare = 8

// pruneBySideIndex is PruneBySideIndex; exact: positions are exactly the
// rows matching the predicate, so the row group's ranges are cut to them
// (gaps of any length) and marked exact, as long as they fit in the file's
// budget of exact ranges (*budget, what is left of MaxExactRanges), which
// they take from it, and are no more than one per exactRangeShare rows.
func pruneBySideIndex(rgp *RowGroupAccess, positions *roaring64.Bitmap, first, n int64, exact bool, budget *int) {
	if rgp.Skip || positions == nil || n <= 0 {
		return
	}
	exact = exact && budget != nil && *budget > 0
	rows := rgp.Rows
	if rows == nil {
		rows = All(n)
	}
	gap := int64(MinSideIndexGap)
	if exact {
		gap = 1
	}
	var out []RowRange
	for _, r := range rows {
		limit := -1
		if exact {
			limit = min(*budget, max(1, int(n/exactRangeShare))) - len(out)
		}
		part, ok := matchingRanges(positions, first, r, gap, limit)
		if !ok { // too many exact ranges: candidates merged across short gaps
			exact, out = false, nil
			for _, r := range rows {
				part, _ := matchingRanges(positions, first, r, MinSideIndexGap, -1)
				out = append(out, part...)
			}
			break
		}
		out = append(out, part...)
	}
	if exact {
		*budget -= len(out)
	}
	set := normalize(out)
	rgp.RowsExact = exact
	switch {
	case len(set) == 0:
		rgp.Skip, rgp.SkipTier = true, TierSideIndex
	case set.Covers(n):
	case rgp.Rows == nil || set.Rows() < rows.Rows():
		rgp.Rows = set
	}
}

// matchingRanges are the parts of r (row-group-local, the group starting at
// file position first) holding positions, merged across gaps shorter than
// gap rows; more than limit ranges (limit >= 0; negative: no limit) stop
// the walk and return nil, false.
func matchingRanges(positions *roaring64.Bitmap, first int64, r RowRange, gap int64, limit int) ([]RowRange, bool) {
	lo, hi := uint64(first+r.Start), uint64(first+r.End)
	if rangeCardinality(positions, lo, hi) == 0 {
		return nil, true
	}
	words := rangeBits(positions, lo, hi)
	defer rangeWords.Put(words)
	// counted first, then made: a walk stopped at the limit makes nothing
	n := bitRuns(*words, r.End-r.Start, gap, limit, nil)
	if limit >= 0 && n > limit {
		return nil, false
	}
	out := make([]RowRange, 0, n)
	bitRuns(*words, r.End-r.Start, gap, -1, func(start, end int64) {
		out = append(out, RowRange{r.Start + start, r.Start + end})
	})
	return out, true
}

// rangeBits are the positions in [lo, hi) as a bitset of hi-lo bits (bit
// i: position lo+i), from rangeWords.
func rangeBits(positions *roaring64.Bitmap, lo, hi uint64) *[]uint64 {
	nw := int((hi - lo + 63) / 64)
	words := rangeWords.Get().(*[]uint64)
	if cap(*words) < nw {
		*words = make([]uint64, nw)
	}
	*words = (*words)[:nw]
	clear(*words)
	in := roaring64.New()
	in.AddRange(lo, hi)
	in.And(positions)
	w := *words
	eachPositionBatch(in, func(batch []uint64) {
		for _, p := range batch {
			i := p - lo
			w[i>>6] |= 1 << (i & 63)
		}
	})
	return words
}

// bitRuns counts the runs of set bits of words (n bits), runs closer than
// gap merged, telling emit each (start, end) when not nil; it stops past
// limit runs (limit >= 0).
func bitRuns(words []uint64, n, gap int64, limit int, emit func(start, end int64)) int {
	if gap >= 64 {
		return wideRuns(words, gap, limit, emit)
	}
	count := 0
	start, end := int64(-1), int64(-1)
	for i := nextBit(words, 0, true, n); i < n; {
		j := nextBit(words, i, false, n) // the run is [i, j)
		if start >= 0 && i-end < gap {
			end = j
		} else {
			if start >= 0 {
				if count++; limit >= 0 && count > limit {
					return count
				}
				if emit != nil {
					emit(start, end)
				}
			}
			start, end = i, j
		}
		i = nextBit(words, j, true, n)
	}
	if start >= 0 {
		count++
		if emit != nil && (limit < 0 || count <= limit) {
			emit(start, end)
		}
	}
	return count
}

// wideRuns is bitRuns for gaps of at least 64 bits, a word at a time: no
// gap inside a word is that long, so only the zeros before a word's first
// set bit (with those after the last set bit before it) can split a run.
func wideRuns(words []uint64, gap int64, limit int, emit func(start, end int64)) int {
	count := 0
	start, end := int64(-1), int64(-1) // the open run; end: past its last set bit
	for wi, w := range words {
		if w == 0 {
			continue
		}
		base := int64(wi) * 64
		if first := base + int64(bits.TrailingZeros64(w)); start < 0 || first-end >= gap {
			if start >= 0 {
				if count++; limit >= 0 && count > limit {
					return count
				}
				if emit != nil {
					emit(start, end)
				}
			}
			start = first
		}
		end = base + 64 - int64(bits.LeadingZeros64(w))
	}
	if start >= 0 {
		count++
		if emit != nil && (limit < 0 || count <= limit) {
			emit(start, end)
		}
	}
	return count
}

// nextBit is the first bit at or after i that is set (set) or clear (not
// set), or n when there is none before n.
func nextBit(words []uint64, i int64, set bool, n int64) int64 {
	for i < n {
		w := words[i>>6]
		if !set {
			w = ^w
		}
		w >>= uint(i & 63)
		if w != 0 {
			return min(i+int64(bits.TrailingZeros64(w)), n)
		}
		i = (i | 63) + 1
	}
	return n
}

// positionBatches are rangeBits' buffers of positions, rangeWords its
// bitsets.
var (
	positionBatches = sync.Pool{New: func() any { b := make([]uint64, 4096); return &b }}
	rangeWords      = sync.Pool{New: func() any { return new([]uint64) }}
)

// sideIndexTier narrows each row group left to the rows the side indexes
// say might match (exactly, when they answered the whole predicate).
// Under a LIMIT (limit > 0) an exact answer is walked only as far as the
// limit's rows, the row groups after them skipped by the limit tier
// (tier_limit.go): the walk and the exact-range budget are one pass.
type sideIndexTier struct{}

func (sideIndexTier) Narrow(ctx context.Context, fc *fileContext, fa *FileAccess) error {
	if fc.off(TierSideIndex) {
		return nil
	}
	fp, limit := fc.plan, fc.req.Limit
	if fp.SideIndex != nil && fp.SideIndexCut && !limitReachedWithin(fp, limit) {
		// The first positions asked for end before the limit's rows (deleted
		// rows among them): the whole answer is needed after all (none, if
		// it cannot be had).
		fp.SideIndex, fp.SideIndexExact, fp.SideIndexCut = nil, false, false
		if err := computeSideIndex(ctx, fc.req.SideIndex, []*FilePlan{fp}, 0); err != nil {
			return err
		}
	}
	if fp.SideIndex == nil {
		return nil
	}
	budget := MaxExactRanges
	lim := newRowLimit(fp, limit)
	err := fa.narrowRowGroups(fp.Footer.RowGroupRows, func(_ int, r RowGroupAccess, first, n int64) RowGroupAccess {
		if lim.skipRest(&r) {
			return r
		}
		lim.truncate(&r, fp.SideIndex, fa.deleted, first, n)
		pruneBySideIndex(&r, fp.SideIndex, first, n, fp.SideIndexExact, &budget)
		return r
	})
	fp.limitCertain = lim.certain(limit)
	return err
}

// limitReachedWithin says the limit tier, walking fp's row groups as
// sideIndexTier does, finds the limit's rows among fp.SideIndex's
// positions: only then is an answer cut to its first positions the same
// plan as the whole answer (every row after the prefix is skipped).
func limitReachedWithin(fp *FilePlan, limit int64) bool {
	sim := newRowLimit(fp, limit)
	if sim == nil {
		return false
	}
	var first int64
	for rg := range fp.rowGroups {
		n := fp.Footer.RowGroupRows(rg)
		rgp := fp.rowGroups[rg] // truncate replaces Rows, never writes into them
		sim.truncate(&rgp, fp.SideIndex, fp.deleted, first, n)
		if sim.reached() {
			return true
		}
		first += n
	}
	return false
}

// computeSideIndex asks src about the surviving files.
//
// A LIMIT's plan asks only the first `first` positions of each exact
// answer (first > 0: the limit and Options.LimitSlack): the limit tier
// never plans past them when the file holds the limit's rows, and
// sideIndexTier asks the whole answer of a file where it would.
func computeSideIndex(ctx context.Context, src SideIndexSource, live []*FilePlan, first int64) error {
	if src == nil || len(live) == 0 {
		return nil
	}
	files := make([]*DataFile, len(live))
	for i, fp := range live {
		files[i] = fp.File
	}
	bms, notes, err := src.Select(ctx, files, first)
	if err != nil {
		return err
	}
	if len(bms) != len(files) {
		return perr.New(perr.Internal, "side index source returned %d answers for %d files", len(bms), len(files))
	}
	for i, fp := range live {
		fp.SideIndex = bms[i]
		fp.SideIndexExact = bms[i] != nil && i < len(notes.Exact) && notes.Exact[i]
		fp.SideIndexCut = fp.SideIndexExact && i < len(notes.Cut) && notes.Cut[i]
		fp.sideIndexSkipped = bms[i] == nil && first > 0 && i < len(notes.Skipped) && notes.Skipped[i]
		if bms[i] != nil && !fp.SideIndexExact && i < len(notes.Cut) && notes.Cut[i] {
			// a cut answer the source did not call exact says nothing of
			// the rows after it: unusable
			fp.SideIndex = nil
		}
		if i < len(notes.Used) {
			fp.Used = append(fp.Used, notes.Used[i]...)
		}
		if i < len(notes.Missing) {
			fp.Missing = append(fp.Missing, notes.Missing[i]...)
		}
	}
	return nil
}
