package plan

import (
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// TierLimit leaves out what a LIMIT without ORDER BY cannot need: once the
// rows planned so far hold Limit rows certain to match — rows the side
// indexes answered exactly, deleted rows not counted — the rest of a
// file's rows and the files after it are not planned. Only exact answers
// count, so a file whose rows the reader must still evaluate never ends
// the plan early, and a LIMIT asking more rows than match plans them all.
//
//	exact positions ─► first rows holding `need` matches ─► side_index tier
//	                        │ need reached
//	                        ▼
//	          later row groups, later files: skipped (limit)
const TierLimit = "limit"

// rowLimit counts, over one file's row groups in order, the rows still
// needed; a nil *rowLimit is no limit.
type rowLimit struct {
	need int64
}

// newRowLimit is the limit of fp's rows: limit > 0 and the side indexes
// answered its predicate exactly; otherwise nil (no limit applies).
func newRowLimit(fp *FilePlan, limit int64) *rowLimit {
	if limit <= 0 || !fp.SideIndexExact || fp.SideIndex == nil {
		return nil
	}
	return &rowLimit{need: limit}
}

// reached says the rows planned hold the limit's rows.
func (l *rowLimit) reached() bool { return l != nil && l.need <= 0 }

// truncate narrows rgp's rows to the shortest prefix holding the rows
// still needed (plus the row group's deleted ones, any of which might be
// among them), so the side index tier walks only that prefix, and counts
// the rows kept that are certain to match.
func (l *rowLimit) truncate(rgp *RowGroupAccess, positions, deleted *roaring64.Bitmap, first, n int64) {
	if l == nil || rgp.Skip {
		return
	}
	deletedHere := int64(0)
	if deleted != nil {
		deletedHere = int64(rangeCardinality(deleted, uint64(first), uint64(first+n)))
	}
	want := l.need + deletedHere
	rows := rgp.Rows
	if rows == nil {
		rows = All(n)
	}
	found := int64(0)
	for i, r := range rows {
		lo, hi := uint64(first+r.Start), uint64(first+r.End)
		c := int64(rangeCardinality(positions, lo, hi))
		if found+c < want {
			found += c
			continue
		}
		// the (want-found)-th position at or after lo ends the prefix
		before := uint64(0)
		if lo > 0 {
			before = positions.Rank(lo - 1)
		}
		last, err := positions.Select(before + uint64(want-found) - 1)
		if err != nil { // cannot happen: c positions lie in [lo, hi)
			break
		}
		kept := append(RowSet{}, rows[:i]...)
		rgp.Rows = append(kept, RowRange{r.Start, int64(last) - first + 1})
		found = want
		break
	}
	// The rows kept hold found positions, deletedHere of which at most are
	// deleted: found - deletedHere are certain to come back.
	l.need -= max(0, found-deletedHere)
}

// skipRest skips rgp when the limit was reached before it (a nil limit
// never is).
func (l *rowLimit) skipRest(rgp *RowGroupAccess) bool {
	if !l.reached() || rgp.Skip {
		return false
	}
	rgp.Skip, rgp.SkipTier = true, TierLimit
	return true
}

// certain are the rows of fp's plan certain to match: what the limit
// counted (limit - need), 0 when no limit applied.
func (l *rowLimit) certain(limit int64) int64 {
	if l == nil {
		return 0
	}
	return limit - max(0, l.need)
}

// narrowFilesByLimit skips the live files past the limit (filesPastLimit),
// counting them into c, and returns their indexes.
func narrowFilesByLimit(live []*FilePlan, limit int64, c *tierCounter) []int {
	past := filesPastLimit(live, limit)
	for _, i := range past {
		skipFile(live[i], c)
	}
	return past
}

// filesPastLimit are the indexes of live files after the one whose plan
// brings the rows certain to match to limit; their plans hold nothing the
// LIMIT needs.
func filesPastLimit(live []*FilePlan, limit int64) []int {
	if limit <= 0 {
		return nil
	}
	var total int64
	for i, fp := range live {
		total += fp.limitCertain
		if total >= limit {
			var past []int
			for j := i + 1; j < len(live); j++ {
				past = append(past, j)
			}
			return past
		}
	}
	return nil
}

// skipFile skips every row group of fp left (a file past the limit),
// counting them under the limit tier.
func skipFile(fp *FilePlan, c *tierCounter) {
	skipped := 0
	for i := range fp.rowGroups {
		if !fp.rowGroups[i].Skip {
			fp.skipRowGroup(i, TierLimit)
			skipped++
		}
	}
	if skipped > 0 {
		c.rowGroups += int64(skipped)
		c.files++
	}
}

// noteSkippedSideIndexes names, in indexes_missing, the side indexes of
// files planned without them because the source skipped them (the files
// before held a LIMIT's first positions, but deleted rows among them left
// the limit short): such a file is planned whole, never fewer rows.
func noteSkippedSideIndexes(live []*FilePlan, past []int) {
	isPast := make(map[int]bool, len(past))
	for _, i := range past {
		isPast[i] = true
	}
	for i, fp := range live {
		if fp.sideIndexSkipped && !isPast[i] && !fp.allSkipped() {
			fp.Missing = append(fp.Missing, "side index: not asked (the files before were to hold the LIMIT's rows; deleted rows among them)")
		}
	}
}
