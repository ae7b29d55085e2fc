package plan

import (
	"bytes"
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// TierDeletes is the tier that applies Iceberg deletes (position-delete
// files, deletion vectors, equality deletes) to the access plan.
const TierDeletes = "deletes"

// DeleteSource computes the deleted row positions of data files (the
// catalog asks the volume pushdown services that hold them).
type DeleteSource interface {
	// Deleted returns one bitmap of deleted file-absolute positions per
	// file, index-aligned; nil means nothing is deleted.
	Deleted(ctx context.Context, files []*DataFile) ([]*roaring64.Bitmap, DeleteStats, error)
}

// DeleteStats are the figures of one Deleted call.
type DeleteStats struct {
	FilesApplied, CacheHits, CacheMisses int64
	// Degraded notes say where the work ran when not beside the data.
	Degraded []string
}

// deletesTier narrows each row group left by the file's deleted positions
// (PruneByDeletes).
type deletesTier struct{}

func (deletesTier) Narrow(_ context.Context, fc *fileContext, fa *FileAccess) error {
	if fa.deleted == nil || fa.deleted.IsEmpty() {
		return nil
	}
	return fa.narrowRowGroups(fc.footer.RowGroupRows, func(_ int, r RowGroupAccess, first, n int64) RowGroupAccess {
		PruneByDeletes(&r, fa.deleted, first, n)
		return r
	})
}

// MinDeletedRun is the shortest run of deleted rows that splits a planned
// row range: shorter runs stay inside the range (the reader drops them by
// the delete mask), so row ranges stay few.
const MinDeletedRun = 256

// PruneByDeletes narrows a row group's plan by its deleted positions
// (row-group-local [0, n) after subtracting first): a row group whose
// planned rows are all deleted is skipped; runs of at least MinDeletedRun
// deleted rows are cut out of the planned ranges. It only ever narrows.
func PruneByDeletes(rgp *RowGroupAccess, deleted *roaring64.Bitmap, first, n int64) {
	if rgp.Skip || deleted == nil || n <= 0 {
		return
	}
	rows := rgp.Rows
	if rows == nil {
		rows = All(n)
	}
	var out RowSet
	for _, r := range rows {
		out = append(out, liveRanges(deleted, first, r)...)
	}
	switch {
	case len(out) == 0:
		rgp.Skip, rgp.SkipTier = true, TierDeletes
	case out.Covers(n):
		// nothing narrowed
	case rgp.Rows == nil || out.Rows() < rows.Rows():
		rgp.Rows = out
	}
}

// liveRanges returns the parts of r (row-group-local) left after cutting
// deleted runs of at least MinDeletedRun rows, and nothing when every row
// of r is deleted.
func liveRanges(deleted *roaring64.Bitmap, first int64, r RowRange) RowSet {
	lo, hi := uint64(first+r.Start), uint64(first+r.End)
	card := rangeCardinality(deleted, lo, hi)
	if card == 0 {
		return RowSet{r}
	}
	if card == hi-lo {
		return nil
	}
	var out RowSet
	start := r.Start // current live range start (local)
	runStart, runLen := int64(-1), int64(0)
	it := deleted.Iterator()
	it.AdvanceIfNeeded(lo)
	flush := func() {
		if runLen >= MinDeletedRun {
			if runStart > start {
				out = append(out, RowRange{start, runStart})
			}
			start = runStart + runLen
		}
	}
	for it.HasNext() {
		p := it.Next()
		if p >= hi {
			break
		}
		local := int64(p) - first
		if runLen > 0 && local == runStart+runLen {
			runLen++
			continue
		}
		flush()
		runStart, runLen = local, 1
	}
	flush()
	if start < r.End {
		out = append(out, RowRange{start, r.End})
	}
	return out
}

func rangeCardinality(b *roaring64.Bitmap, lo, hi uint64) uint64 {
	if hi <= lo {
		return 0
	}
	n := b.Rank(hi - 1)
	if lo > 0 {
		n -= b.Rank(lo - 1)
	}
	return n
}

// deletedIn serializes the deleted positions in [lo, hi) (portable
// roaring64); nil when none.
func deletedIn(b *roaring64.Bitmap, lo, hi uint64) ([]byte, uint64) {
	if b == nil || rangeCardinality(b, lo, hi) == 0 {
		return nil, 0
	}
	sub := roaring64.New()
	sub.AddRange(lo, hi)
	sub.And(b)
	sub.RunOptimize()
	var buf bytes.Buffer
	if _, err := sub.WriteTo(&buf); err != nil {
		return nil, 0
	}
	return buf.Bytes(), sub.GetCardinality()
}
