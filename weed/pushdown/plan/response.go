package plan

import (
	"cmp"
	"context"
	"slices"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// byteRange is [Off, Off+Len) of one file.
type byteRange struct{ Off, Len int64 }

// MaxHoleFraction bounds the holes Coalesce lets into a merged range: at
// most this fraction of the bytes the range serves, so a plan reads at most
// 1.2× the bytes of the pages it names.
const MaxHoleFraction = 0.2

// Coalesce sorts ranges and merges neighbours whose hole is at most gap,
// as long as the merged range's holes stay within MaxHoleFraction of the
// bytes it serves.
func Coalesce(rs []byteRange, gap int64) []byteRange {
	if len(rs) == 0 {
		return nil
	}
	sorted := rs
	if !slices.IsSortedFunc(rs, byOffset) {
		sorted = slices.Clone(rs)
		slices.SortFunc(sorted, byOffset)
	}
	out := make([]byteRange, 1, len(sorted))
	out[0] = sorted[0]
	useful := sorted[0].Len // bytes the last merged range serves
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		end := last.Off + last.Len
		hole := r.Off - end
		if hole <= 0 {
			if e := r.Off + r.Len; e > end {
				useful += e - end
				last.Len = e - last.Off
			}
			continue
		}
		if holes := last.Len - useful + hole; hole <= gap && float64(holes) <= MaxHoleFraction*float64(useful+r.Len) {
			last.Len = r.Off + r.Len - last.Off
			useful += r.Len
			continue
		}
		out = append(out, r)
		useful = r.Len
	}
	return out
}

func byOffset(a, b byteRange) int { return cmp.Compare(a.Off, b.Off) }

// fileOutput is the response part of one planned file.
type fileOutput struct {
	rowGroups     []*pushdown_pb.RowGroupRef
	pages         []*pushdown_pb.PageRef
	ranges        []byteRange
	rowsPlanned   int64
	pagesTotal    int64
	pagesPlanned  int64
	bytesTotal    int64 // projected column chunks of every row group
	rowGroupsLeft int
	// a memoized output's response messages, shared by every response
	// naming the file (nil: built per plan): its FileRanges (bytesPlanned
	// their bytes) and its PlannedFile, valid for a manifest entry of the
	// same record count
	fileRanges   []*pushdown_pb.FileRange
	bytesPlanned int64
	planned      *pushdown_pb.PlannedFile
}

// plannedFile is fp's PlannedFile: the memoized one when it says what fp's
// manifest entry says, else one cut from slab.
func (out *fileOutput) plannedFile(fp *FilePlan, slab *slab[pushdown_pb.PlannedFile]) *pushdown_pb.PlannedFile {
	if pf := out.planned; pf != nil && pf.File == fp.File.Path && pf.SizeBytes == fp.File.Size && pf.RecordCount == fp.File.RecordCount {
		return pf
	}
	pf := &slab.take(1)[0]
	fillPlannedFile(pf, fp, out)
	return pf
}

func fillPlannedFile(pf *pushdown_pb.PlannedFile, fp *FilePlan, out *fileOutput) {
	pf.File, pf.SizeBytes, pf.RecordCount = fp.File.Path, fp.File.Size, fp.File.RecordCount
	pf.FooterOffset, pf.FooterLength = fp.Footer.TrailerOffset(), fp.Footer.TrailerLength()
	pf.RowGroupsTotal, pf.RowGroupsPlanned = int32(len(fp.rowGroups)), int32(out.rowGroupsLeft)
	pf.HasPageIndex, pf.Identity = fp.Footer.HasNativePageIndex(), fp.Footer.IdentityDir()
}

// shareMessages builds the response messages of an output about to be
// memoized for fp.
func (out *fileOutput) shareMessages(fp *FilePlan) *fileOutput {
	if out.rowGroupsLeft == 0 {
		return out
	}
	msgs := make([]pushdown_pb.FileRange, len(out.ranges))
	out.fileRanges = make([]*pushdown_pb.FileRange, len(out.ranges))
	for i, r := range out.ranges {
		msgs[i].File, msgs[i].Offset, msgs[i].Length = fp.File.Path, r.Off, r.Len
		out.fileRanges[i] = &msgs[i]
		out.bytesPlanned += r.Len
	}
	out.planned = &pushdown_pb.PlannedFile{}
	fillPlannedFile(out.planned, fp, out)
	return out
}

// fileOutputOf is buildFile's output for fp's projection. A file read
// whole (no row group pruned, no row ranges, no deletes) plans the same
// every time for a projection, and so does a file whose every row group
// was pruned: those outputs are memoized on its footer and shared by every
// response naming it: nothing may modify them or the refs they hold (the
// file state's). Warm plans of many files that every query visits then do
// no per-file assembly; the last projection's outputs are reached straight
// from the file state.
func fileOutputOf(fp *FilePlan, fieldIDs []int, idsKey string, gap int64, positions bool) *fileOutput {
	skipped, whole := 0, 0
	for _, rg := range fp.rowGroups {
		switch {
		case rg.Skip:
			skipped++
		case rg.Rows == nil && !rg.RowsExact: // RowsExact: of this predicate only
			whole++
		}
	}
	allSkipped := skipped == len(fp.rowGroups)
	if (!allSkipped && whole < len(fp.rowGroups)) || (!allSkipped && fp.deleted != nil) || fp.File.Path != fp.Footer.ID.Path {
		return buildFileOf(fp, fieldIDs, idsKey, gap, positions)
	}
	side := fp.Footer.SidePageColumns() // the page counts change when side page indexes attach
	slot := &fp.state.output
	if allSkipped {
		slot = &fp.state.skipped
	}
	if m := slot.Load(); m != nil && m.ids == idsKey && m.gap == gap && m.side == side {
		return m.out
	}
	type key struct {
		cm      *ColumnMap
		ids     string
		gap     int64
		side    int32
		skipped bool
	}
	out := fp.Footer.SmallMemo(key{fp.Columns, idsKey, gap, side, allSkipped}, func() any { return buildFileOf(fp, fieldIDs, idsKey, gap, false).shareMessages(fp) }).(*fileOutput)
	slot.Store(&outputMemo{ids: idsKey, gap: gap, side: side, out: out})
	return out
}

// buildFileOf is buildFile over fp's projection with the file state's refs.
func buildFileOf(fp *FilePlan, fieldIDs []int, idsKey string, gap int64, positions bool) *fileOutput {
	refs := fp.state.refs
	return buildFile(fp, projectionOf(fp, fieldIDs, idsKey), func(col int) *pushdown_pb.ColumnRef { return refs[col] }, gap, positions)
}

// buildFile assembles the refs and byte ranges of one file plan;
// positions: a row group's many row ranges go as row_positions.
func buildFile(fp *FilePlan, projected []int, fieldOf func(col int) *pushdown_pb.ColumnRef, gap int64, positions bool) *fileOutput {
	out := &fileOutput{}
	md := fp.Footer.Meta
	// One allocation for the file's row group refs.
	refs := make([]pushdown_pb.RowGroupRef, 0, md.NumRowGroups())
	var firstRow int64
	// Pages of a repeated column may begin inside a row (writers do not all
	// start them at row boundaries): plan such chunks whole, unless their
	// pages come from a page_index side index, which marks the pages
	// starting inside a row: a wanted row then plans every page holding
	// its levels (footer.Page.HeldRows), and the refs say where a page
	// starts or ends inside a row.
	var repeatedCols uint64 // bit i: projected[i] is repeated (first 64)
	for i, col := range projected {
		if i < 64 && md.Schema.Column(col).MaxRepetitionLevel() > 0 {
			repeatedCols |= 1 << i
		}
	}
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		numRows := fp.Footer.RowGroupRows(rg)
		rgp := fp.rowGroups[rg]
		var index *footer.RowGroupIndex
		if fp.Footer.HasPageIndex() {
			index, _ = fp.Footer.PageIndex(context.Background(), rg)
		}
		for i, col := range projected {
			ch := &fp.Footer.Chunks[rg][col]
			out.bytesTotal += ch.Length
			var pages []footer.Page
			if index != nil && col < len(index.Columns) && index.Columns[col].SpansErr == nil {
				pages = index.Columns[col].Pages
			}
			repeated := repeatedCols&(1<<i) != 0
			if i >= 64 {
				repeated = md.Schema.Column(col).MaxRepetitionLevel() > 0
			}
			listPages := false
			if repeated && fp.Footer.HasSideListPages(col) {
				repeated, listPages = false, true
			}
			out.pagesTotal += int64(len(pages))
			if rgp.Skip {
				continue
			}
			if rgp.Rows == nil || pages == nil || repeated {
				out.ranges = append(out.ranges, byteRange{ch.Start, ch.Length})
				out.pagesPlanned += int64(len(pages))
				continue
			}
			ref := fieldOf(col)
			if first := pages[0].Offset; first > ch.Start {
				out.ranges = append(out.ranges, byteRange{ch.Start, first - ch.Start})
				out.pages = append(out.pages, &pushdown_pb.PageRef{File: fp.File.Path, RowGroup: int32(rg), Column: ref, Page: -1,
					Offset: ch.Start, Length: first - ch.Start, Dictionary: true})
			}
			for i, pg := range pages {
				if !rgp.Rows.Overlaps(pg.HeldRows()) {
					continue
				}
				out.pagesPlanned++
				out.ranges = append(out.ranges, byteRange{pg.Offset, pg.Length})
				pr := &pushdown_pb.PageRef{File: fp.File.Path, RowGroup: int32(rg), Column: ref, Page: int32(i),
					Offset: pg.Offset, Length: pg.Length, FirstRowIndex: pg.FirstRow, RowCount: pg.EndRow - pg.FirstRow}
				if listPages {
					pr.StartsInsideRow = pg.StartsInsideRow
					pr.EndsInsideRow = i+1 < len(pages) && pages[i+1].StartsInsideRow
				}
				out.pages = append(out.pages, pr)
			}
		}
		if !rgp.Skip {
			out.rowGroupsLeft++
			refs = refs[:len(refs)+1]
			ref := &refs[len(refs)-1]
			ref.File, ref.RowGroup, ref.FirstRow, ref.RowCount = fp.File.Path, int32(rg), firstRow, numRows
			ref.RowsExact = rgp.RowsExact
			ref.DeletedPositions, _ = deletedIn(fp.deleted, uint64(firstRow), uint64(firstRow+numRows))
			if rgp.Rows != nil {
				ref.RowRanges, ref.RowPositions = rowRefsOf(rgp.Rows, positions)
				out.rowsPlanned += rgp.Rows.Rows()
			} else {
				out.rowsPlanned += numRows
			}
			out.rowGroups = append(out.rowGroups, ref)
		}
		firstRow += numRows
	}
	out.ranges = Coalesce(out.ranges, gap)
	return out
}

// rowRefsOf are a row group's planned rows as the response carries them:
// row ranges, or (positions, many ranges) a bitmap of the rows.
func rowRefsOf(rows RowSet, positions bool) ([]*pushdown_pb.RowRange, []byte) {
	if positions && len(rows) >= MinPositionRanges {
		if b, err := PositionBytes(rows); err == nil {
			return nil, b
		}
	}
	msgs := make([]pushdown_pb.RowRange, len(rows))
	out := make([]*pushdown_pb.RowRange, len(rows))
	for i, r := range rows {
		msgs[i].Start, msgs[i].End = r.Start, r.End
		out[i] = &msgs[i]
	}
	return out, nil
}
