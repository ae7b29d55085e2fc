package plan

import (
	"fmt"
	"sort"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// RowGroupAccess is the access plan of one row group: skipped, or scanned
// (Rows nil: every row; else only those row ranges), its rows candidates
// the reader filters or exactly the matching ones (RowsExact). Its zero
// value reads every row, which might match.
type RowGroupAccess struct {
	Skip     bool
	SkipTier string // the tier that skipped it
	// Rows are the row ranges that might match (row-group-local); nil means
	// every row.
	Rows RowSet
	// RowsExact: Rows (nil: every row) are exactly the rows matching the
	// predicate, deleted ones aside (side indexes answered it exactly).
	RowsExact bool
}

// FileAccess is what a query reads of one file: the file skipped, or per
// row group skip / scan / a row selection, exact or candidate, and the
// file's deleted positions, which the reader drops (the pages of each
// projected column follow from the row selection and the page index when
// the response is built, response.go). It plays the part of DataFusion's
// ParquetAccessPlan.
//
// The zero value (and a fresh one, shaped to a footer's row groups) reads
// everything: every row might match. Tiers narrow it through its methods
// only, which cannot widen it: a skip is never undone, a row selection is
// only replaced by one within it (anything else is refused with an
// Internal error: a tier that widens is a bug), and deleted positions are
// only added. So whatever order tiers run in, each answer is at most what
// the one before it said.
type FileAccess struct {
	skip      bool
	skipTier  string
	rowGroups []RowGroupAccess // before the footer is read: every row group
	shaped    bool             // rowGroups are the footer's
	deleted   *roaring64.Bitmap
}

// Skipped says the whole file is skipped.
func (a *FileAccess) Skipped() bool { return a.skip }

// SkippedBy is the tier that skipped the whole file ("" if none did).
func (a *FileAccess) SkippedBy() string { return a.skipTier }

// NumRowGroups is the number of row groups the access is shaped to (0
// before the footer is read).
func (a *FileAccess) NumRowGroups() int { return len(a.rowGroups) }

// RowGroup is row group rg's access (a copy: narrowing goes through the
// FileAccess); the zero value when the access is not shaped yet.
func (a *FileAccess) RowGroup(rg int) RowGroupAccess {
	if rg < 0 || rg >= len(a.rowGroups) {
		return RowGroupAccess{}
	}
	return a.rowGroups[rg]
}

// Deleted are the file's deleted positions (file-absolute; nil = none).
// The bitmap is shared: it must not be modified.
func (a *FileAccess) Deleted() *roaring64.Bitmap { return a.deleted }

// allSkipped says no row is read: the file is skipped, or every row group
// of a shaped access is.
func (a *FileAccess) allSkipped() bool {
	if a.skip {
		return true
	}
	for i := range a.rowGroups {
		if !a.rowGroups[i].Skip {
			return false
		}
	}
	return a.shaped
}

// skipFile skips the whole file (tier: who did).
func (a *FileAccess) skipFile(tier string) {
	if !a.skip {
		a.skip, a.skipTier = true, tier
	}
}

// shape gives a fresh access its n row groups, each read whole (storage:
// n zero values to hold them, e.g. cut from a slab). A shaped access keeps
// its row groups.
func (a *FileAccess) shape(storage []RowGroupAccess) {
	if !a.shaped {
		clear(storage)
		a.rowGroups, a.shaped = storage, true
	}
}

// addDeleted adds deleted positions (nil or empty: none); the bitmap is
// kept, not copied, when the access has none yet.
func (a *FileAccess) addDeleted(bm *roaring64.Bitmap) {
	switch {
	case bm == nil:
	case a.deleted == nil:
		a.deleted = bm
	default:
		a.deleted = roaring64.Or(a.deleted, bm)
	}
}

// skipRowGroup skips row group rg (tier: who did); skipped already, it
// keeps its first tier.
func (a *FileAccess) skipRowGroup(rg int, tier string) {
	if r := &a.rowGroups[rg]; !r.Skip {
		r.Skip, r.SkipTier = true, tier
	}
}

// narrowRowGroup replaces row group rg's access (of n rows) by to, which
// must lie within it: a skipped row group stays as it is, and to's rows
// must be within the rows planned (to skipped, its rows do not matter).
// Anything wider is refused.
func (a *FileAccess) narrowRowGroup(rg int, n int64, to RowGroupAccess) error {
	from := &a.rowGroups[rg]
	if from.Skip {
		return nil
	}
	if to.Skip {
		from.Skip, from.SkipTier = true, to.SkipTier
		return nil
	}
	if !within(to.Rows, from.Rows, n) {
		return perr.New(perr.Internal, "row group %d: a tier widened its rows from %s to %s (tiers may only narrow)", rg, describeRows(from.Rows, n), describeRows(to.Rows, n))
	}
	*from = to
	return nil
}

// intersectRowGroup narrows row group rg (of n rows) to what both its
// access and to say: skipped if either is, else the rows of both, marked
// exact as to says; no row left, it is skipped by tier.
func (a *FileAccess) intersectRowGroup(rg int, n int64, to RowGroupAccess, tier string) error {
	from := a.rowGroups[rg]
	if from.Skip || to.Skip || from.Rows == nil {
		return a.narrowRowGroup(rg, n, to)
	}
	if to.Rows != nil {
		to.Rows = Intersect(from.Rows, to.Rows)
	} else {
		to.Rows = from.Rows
	}
	if len(to.Rows) == 0 {
		a.skipRowGroup(rg, tier)
		return nil
	}
	return a.narrowRowGroup(rg, n, to)
}

// eachRowGroupLeft calls f with every row group not skipped, in order,
// until it fails.
func (a *FileAccess) eachRowGroupLeft(f func(rg int) error) error {
	for rg := range a.rowGroups {
		if !a.rowGroups[rg].Skip {
			if err := f(rg); err != nil {
				return err
			}
		}
	}
	return nil
}

// narrowRowGroups hands every row group left (its access, first file
// position and row count) to narrow and keeps what it returns, which may
// only narrow it (narrowRowGroup). first is the file position of row
// group 0; rows(rg) is a row group's row count.
func (a *FileAccess) narrowRowGroups(rows func(rg int) int64, narrow func(rg int, r RowGroupAccess, first, n int64) RowGroupAccess) error {
	var first int64
	for rg := range a.rowGroups {
		n := rows(rg)
		if r := a.rowGroups[rg]; !r.Skip {
			if err := a.narrowRowGroup(rg, n, narrow(rg, r, first, n)); err != nil {
				return err
			}
		}
		first += n
	}
	return nil
}

// within says rows (nil: all n) lie inside of (nil: all n).
func within(rows, of RowSet, n int64) bool {
	if len(rows) > 0 && len(rows) == len(of) && &rows[0] == &of[0] {
		return true // the same rows
	}
	if of == nil || of.Covers(n) {
		for _, r := range rows {
			if r.Start < 0 || r.End > n {
				return false
			}
		}
		return true
	}
	if rows == nil {
		return false
	}
	for _, r := range rows {
		if r.End <= r.Start {
			continue
		}
		j := sort.Search(len(of), func(j int) bool { return of[j].End > r.Start })
		if j == len(of) || of[j].Start > r.Start || of[j].End < r.End {
			return false
		}
	}
	return true
}

func describeRows(rows RowSet, n int64) string {
	if rows == nil {
		return fmt.Sprintf("all %d", n)
	}
	return fmt.Sprintf("%d rows in %d ranges", rows.Rows(), len(rows))
}
