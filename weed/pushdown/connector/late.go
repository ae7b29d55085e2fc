package connector

import (
	"context"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// Late materialization, page-aware mode, in a row group the plan did not
// narrow to row ranges (an unclustered column: bloom filters keep the row
// group, page statistics cannot locate the row):
//
//	round 1: predicate columns (whole chunks) + offset indexes of the others
//	         ── predicate ──▶ matching rows
//	round 2: for each other column, the pages holding a matching row (and
//	         its dictionary region), or the whole chunk when that is not
//	         smaller by half; nothing when no row matched
//
// An offset index that is missing, malformed or inconsistent with its chunk
// makes that column read whole: it costs bytes, never rows.

// lateEligible reports whether a top-level field could be read page by
// page: one non-repeated leaf.
func (fl *fileLayout) lateEligible(top int) bool {
	leaves := fl.leavesOf[top]
	return len(leaves) == 1 && fl.md.Schema.Column(leaves[0]).MaxRepetitionLevel() == 0
}

// offsetIndexRanges are the offset indexes of tops' leaves in row group rg.
func (fl *fileLayout) offsetIndexRanges(rg int, tops []int) []byteRange {
	var out []byteRange
	for _, top := range tops {
		for _, leaf := range fl.leavesOf[top] {
			if loc := fl.chunks[rg][leaf].OffsetIndex; validIndexLocation(loc, fl.size) {
				out = append(out, byteRange{loc.Offset, int64(loc.Length)})
			}
		}
	}
	return out
}

func validIndexLocation(loc *metadata.IndexLocation, size int64) bool {
	return loc != nil && loc.Length > 0 && loc.Offset >= 0 && loc.Offset+int64(loc.Length) <= size
}

// latePages selects the pages of top's leaf in row group r.rg that hold a
// row of keep (sorted), with the chunk's dictionary region; ok is false
// when the offset index is unusable or the selection is not at most half
// the chunk.
func (fl *fileLayout) latePages(sf *sparseFile, r *rowGroupRead, top int, keep []int64) (pages []pageRange, dict byteRange, ok bool) {
	leaf := fl.leavesOf[top][0]
	ch := fl.chunks[r.rg][leaf]
	loc := ch.OffsetIndex
	if !validIndexLocation(loc, fl.size) {
		return nil, byteRange{}, false
	}
	b := make([]byte, loc.Length)
	if _, err := sf.ReadAt(b, loc.Offset); err != nil {
		return nil, byteRange{}, false
	}
	oi, err := footer.ParseOffsetIndex(b)
	if err != nil {
		return nil, byteRange{}, false
	}
	all, err := footer.PagesOf(oi, ch, r.numRows)
	if err != nil {
		return nil, byteRange{}, false
	}
	if first := all[0].Offset; first > ch.Start {
		dict = byteRange{ch.Start, first - ch.Start}
	}
	total := dict.Len
	k := 0
	for _, pg := range all {
		for k < len(keep) && keep[k] < pg.FirstRow {
			k++
		}
		if k < len(keep) && keep[k] < pg.EndRow {
			pages = append(pages, pageRange{byteRange{pg.Offset, pg.Length}, pg.FirstRow, pg.EndRow - pg.FirstRow})
			total += pg.Length
		}
	}
	if len(pages) == 0 || 2*total > ch.Length {
		return nil, byteRange{}, false
	}
	return pages, dict, true
}

// decodeTops decodes tops of r: planned pages where the plan gave them,
// whole chunks otherwise.
func (c *Connector) decodeTops(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, tops []int, cols map[int]*column) error {
	var whole []int
	for _, top := range tops {
		if c.opts.Mode == PageAware && fl.pageAwareOK(top, r) {
			col, err := decodePages(ctx, fl, sf, r, top)
			if err != nil {
				return err
			}
			cols[top] = col
			continue
		}
		whole = append(whole, top)
	}
	wcols, err := decodeWhole(ctx, fl, sf, r.rg, whole)
	if err != nil {
		return err
	}
	for top, col := range wcols {
		cols[top] = col
	}
	return nil
}

// decodeLate reads and decodes r's late columns for the matching rows keep.
func (c *Connector) decodeLate(ctx context.Context, pf *pushdown_pb.PlannedFile, fl *fileLayout, sf *sparseFile, r *rowGroupRead, keep []int64, cols map[int]*column) error {
	sel := &rowGroupRead{rg: r.rg, numRows: r.numRows, pages: map[int][]pageRange{}, dict: map[int]byteRange{}}
	var rows []plan.RowRange
	for _, k := range keep {
		rows = append(rows, plan.RowRange{Start: k, End: k + 1})
	}
	sel.rows = plan.Union(nil, rows)
	var ranges []byteRange
	for _, top := range r.late {
		if pages, dict, ok := fl.latePages(sf, r, top, keep); ok {
			leaf := fl.leavesOf[top][0]
			sel.pages[leaf] = pages
			if dict.Len > 0 {
				sel.dict[leaf] = dict
				ranges = append(ranges, dict)
			}
			for _, pg := range pages {
				ranges = append(ranges, pg.byteRange)
			}
			continue
		}
		for _, leaf := range fl.leavesOf[top] {
			ch := fl.chunks[r.rg][leaf]
			ranges = append(ranges, byteRange{ch.Start, ch.Length})
		}
	}
	sf2, err := c.fetch.fetch(ctx, pf.File, pf.SizeBytes, ranges)
	if err != nil {
		return err
	}
	// selected pages decode page by page, the rest whole (pageAwareOK)
	return c.decodeTops(ctx, fl, sf2, sel, r.late, cols)
}
