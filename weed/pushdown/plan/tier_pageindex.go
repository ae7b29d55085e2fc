package plan

import (
	"context"
	"slices"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// pageIndexTier narrows each row group left to the row ranges whose pages
// might match (ColumnIndex → row ranges; within those it was given),
// skipping it when none might.
type pageIndexTier struct{}

func (pageIndexTier) Narrow(ctx context.Context, fc *fileContext, fa *FileAccess) error {
	if fc.off(TierPageIndex) {
		return nil
	}
	return fa.eachRowGroupLeft(func(rg int) error {
		rows, err := fc.SelectRowsByPageIndex(ctx, rg, fc.e)
		switch {
		case err != nil:
			return err
		case rows != nil && len(rows) == 0:
			fa.skipRowGroup(rg, TierPageIndex)
		case rows != nil:
			return fa.intersectRowGroup(rg, fc.footer.RowGroupRows(rg), RowGroupAccess{Rows: rows}, TierPageIndex)
		}
		return nil
	})
}

// SelectRowsByPageIndex narrows row group rg to the row ranges whose pages
// might match. nil means "every row" (no usable page index for the
// predicate's columns).
func (fc *fileContext) SelectRowsByPageIndex(ctx context.Context, rg int, e predicate.Expr) (RowSet, error) {
	if !fc.footer.HasPageIndex() {
		fc.missing.add(note{"page_index", "", ""})
		return nil, nil
	}
	idx, err := fc.footer.PageIndex(ctx, rg)
	if err != nil {
		if perrCtx(err) {
			return nil, err
		}
		fc.volatile = true
		fc.missing.add(note{"page_index", "", err.Error()})
		return nil, nil
	}
	if idx == nil {
		fc.missing.add(note{"page_index", "", ""})
		return nil, nil
	}
	numRows := fc.footer.RowGroupRows(rg)
	// every row, in the worker's scratch (never handed out, see below)
	all := append(fc.allRows[:0], RowRange{0, numRows})
	fc.allRows = all
	narrowed := false
	var sel func(predicate.Expr) RowSet
	sel = func(e predicate.Expr) RowSet {
		switch x := e.(type) {
		case predicate.Const:
			if x.Value {
				return all
			}
			return RowSet{}
		case predicate.And:
			out := all
			for _, k := range x.Kids {
				out = Intersect(out, sel(k))
			}
			return out
		case predicate.Or:
			out := RowSet{}
			for _, k := range x.Kids {
				out = Union(out, sel(k))
			}
			return out
		case *predicate.Leaf:
			rows, ok := fc.leafRows(rg, x, idx, all)
			if !ok {
				return all
			}
			if !rows.Covers(numRows) {
				narrowed = true
			}
			return rows
		}
		return all
	}
	rows := sel(e)
	if !narrowed && rows.Covers(numRows) {
		return nil, nil
	}
	if len(rows) > 0 && &rows[0] == &all[0] {
		rows = slices.Clone(rows)
	}
	return rows, nil
}

// leafRows returns the rows of the pages whose ColumnIndex entry might
// satisfy leaf l; ok is false when the column has no usable page index.
// all is the set of every row of the row group.
func (fc *fileContext) leafRows(rg int, l *predicate.Leaf, idx *footer.RowGroupIndex, all RowSet) (RowSet, bool) {
	if _, absent := fc.absentStats(l); absent {
		return nil, false
	}
	ls, _ := fc.leaf(l)
	if ls.d == nil || ls.col >= len(idx.Columns) {
		return nil, false
	}
	cpi := &idx.Columns[ls.col]
	if cpi.Column == nil || cpi.Offset == nil {
		fc.missing.add(note{"page_index", l.Name, ""})
		return nil, false
	}
	if cpi.SpansErr != nil {
		fc.missing.add(note{"page_index", l.Name, cpi.SpansErr.Error()})
		return nil, false
	}
	spans := cpi.Pages
	pageStats := ls.pageStatsOf(rg, cpi)
	if pageStats == nil {
		fc.missing.add(note{"page_index", l.Name, "column index does not match the offset index"})
		return nil, false
	}
	fc.used.add(note{"page_index", l.Name, ""})
	// Most often every page or none might match: then no list is built.
	var kept []RowRange
	n := 0
	for i, pg := range spans {
		if prune.EvaluateLeaf(l, pageStats[i]) == prune.MightMatch {
			if n < i && kept == nil {
				kept = make([]RowRange, 0, len(spans)-i)
			}
			if kept != nil {
				start, end := pg.HeldRows()
				kept = append(kept, RowRange{start, end})
			}
			n++
		} else if kept == nil && n > 0 {
			kept = make([]RowRange, 0, len(spans))
			for _, p := range spans[:i] {
				start, end := p.HeldRows()
				kept = append(kept, RowRange{start, end})
			}
		}
	}
	switch {
	case n == 0:
		return RowSet{}, true
	case n == len(spans):
		// the pages of a validated offset index cover the row group
		return all, true
	}
	return normalize(kept), true
}

// pageColumnStats turns a column index into per-page statistics, or nil
// when it does not describe the offset index's pages.
func pageColumnStats(cpi footer.ColumnPageIndex, d *value.StatDecoder) []prune.ColumnStats {
	ci, pages := cpi.Column, cpi.Pages
	nullPages, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(nullPages) != len(pages) || len(mins) != len(pages) || len(maxs) != len(pages) {
		return nil
	}
	var nullCounts []int64
	if ci.IsSetNullCounts() {
		nullCounts = ci.GetNullCounts()
		if len(nullCounts) != len(pages) {
			nullCounts = nil
		}
	}
	out := make([]prune.ColumnStats, len(pages))
	for i, pg := range pages {
		var s prune.ColumnStats
		if nullPages[i] {
			// Some writers (parquet-mr with statistics disabled) mark every
			// page "null" with empty bounds. Believe it only when the null
			// count says so too.
			if nullCounts != nil && nullCounts[i] >= pg.EndRow-pg.FirstRow {
				s = prune.AllNull()
			}
		} else {
			if nullCounts != nil && nullCounts[i] >= 0 {
				s.NullsKnown, s.HasNulls = true, nullCounts[i] > 0
			}
			lo, ok1 := d.Decode(mins[i], value.Lower)
			hi, ok2 := d.Decode(maxs[i], value.Upper)
			if ok1 && ok2 && !lo.IsNaN() && !hi.IsNaN() {
				if c, ok := value.Compare(lo, hi); ok && c <= 0 {
					s.HasBounds, s.Lower, s.Upper = true, lo, hi
				}
			}
		}
		out[i] = s
	}
	return out
}

func perrCtx(err error) bool {
	return err == context.Canceled || err == context.DeadlineExceeded
}
