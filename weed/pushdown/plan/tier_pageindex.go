package plan

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// pageSpans returns the row span of every page of a column chunk from its
// OffsetIndex, or an error when the index is not self-consistent.
func pageSpans(oi metadata.OffsetIndex, chunkStart, chunkEnd, numRows int64) ([]RowRange, error) {
	if oi == nil {
		return nil, fmt.Errorf("no offset index")
	}
	locs := oi.GetPageLocations()
	if len(locs) == 0 {
		return nil, fmt.Errorf("offset index lists no pages")
	}
	spans := make([]RowRange, len(locs))
	for i, l := range locs {
		if l == nil {
			return nil, fmt.Errorf("page %d has no location", i)
		}
		if l.Offset < chunkStart || l.CompressedPageSize <= 0 || l.Offset+int64(l.CompressedPageSize) > chunkEnd {
			return nil, fmt.Errorf("page %d at [%d, +%d) lies outside its column chunk [%d, %d)", i, l.Offset, l.CompressedPageSize, chunkStart, chunkEnd)
		}
		start := l.FirstRowIndex
		end := numRows
		if i+1 < len(locs) && locs[i+1] != nil {
			end = locs[i+1].FirstRowIndex
		}
		if (i == 0 && start != 0) || start < 0 || end < start || end > numRows {
			return nil, fmt.Errorf("page %d covers rows [%d, %d) of a %d-row group", i, start, end, numRows)
		}
		if i > 0 && l.Offset < locs[i-1].Offset+int64(locs[i-1].CompressedPageSize) {
			return nil, fmt.Errorf("page %d overlaps page %d", i, i-1)
		}
		spans[i] = RowRange{start, end}
	}
	return spans, nil
}

// SelectRowsByPageIndex narrows row group rg to the row ranges whose pages
// might match. nil means "every row" (no usable page index for the
// predicate's columns).
func (fc *fileContext) SelectRowsByPageIndex(ctx context.Context, rg int, e predicate.Expr) (RowSet, error) {
	if !fc.footer.HasPageIndex() {
		fc.missing["page_index"] = true
		return nil, nil
	}
	idx, err := fc.footer.PageIndex(ctx, rg)
	if err != nil {
		if perrCtx(err) {
			return nil, err
		}
		fc.missing[fmt.Sprintf("page_index: %v", err)] = true
		return nil, nil
	}
	if idx == nil {
		fc.missing["page_index"] = true
		return nil, nil
	}
	numRows := fc.md.RowGroup(rg).NumRows()
	all := All(numRows)
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
			rows, ok := fc.leafRows(rg, x, idx, numRows)
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
	return rows, nil
}

// leafRows returns the rows of the pages whose ColumnIndex entry might
// satisfy leaf l; ok is false when the column has no usable page index.
func (fc *fileContext) leafRows(rg int, l *predicate.Leaf, idx *footer.RowGroupIndex, numRows int64) (RowSet, bool) {
	if _, absent := fc.absentStats(l); absent {
		return nil, false
	}
	d, col, _ := fc.decoder(l)
	if d == nil || col >= len(idx.Columns) {
		return nil, false
	}
	cpi := idx.Columns[col]
	if cpi.Column == nil || cpi.Offset == nil {
		fc.missing[fmt.Sprintf("page_index(%s)", l.Name)] = true
		return nil, false
	}
	cc, err := fc.md.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil, false
	}
	start, length := footer.ChunkRange(cc)
	spans, err := pageSpans(cpi.Offset, start, start+length, numRows)
	if err != nil {
		fc.missing[fmt.Sprintf("page_index(%s): %v", l.Name, err)] = true
		return nil, false
	}
	ci := cpi.Column
	nullPages, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(nullPages) != len(spans) || len(mins) != len(spans) || len(maxs) != len(spans) {
		fc.missing[fmt.Sprintf("page_index(%s): column index has %d pages, offset index %d", l.Name, len(nullPages), len(spans))] = true
		return nil, false
	}
	var nullCounts []int64
	if ci.IsSetNullCounts() {
		nullCounts = ci.GetNullCounts()
		if len(nullCounts) != len(spans) {
			nullCounts = nil
		}
	}
	fc.used[fmt.Sprintf("page_index(%s)", l.Name)] = true
	var kept []RowRange
	for i, span := range spans {
		var s prune.ColumnStats
		if nullPages[i] {
			// Some writers (parquet-mr with statistics disabled) mark every
			// page "null" with empty bounds. Believe it only when the null
			// count says so too.
			if nullCounts != nil && nullCounts[i] >= span.End-span.Start {
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
		if prune.EvaluateLeaf(l, s) == prune.MightMatch {
			kept = append(kept, span)
		}
	}
	return normalize(kept), true
}

func perrCtx(err error) bool {
	return err == context.Canceled || err == context.DeadlineExceeded
}
