package plan

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
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

// responseInputs are what the response is built from: every file's plan
// (its FileAccess as the tiers left it) and output, and the plan's figures.
type responseInputs struct {
	req          *Request
	o            Options
	e            predicate.Expr
	hasPredicate bool
	plans, live  []*FilePlan
	outs         []*fileOutput              // index-aligned with live (nil: not built)
	planned      []*pushdown_pb.PlannedFile // index-aligned with live (nil: nothing planned)
	projectedIDs map[int]bool
	tiers        map[string]*tierCounter
	hits, misses int64
	delStats     DeleteStats
	start        time.Time
}

// buildResponse makes the wire response of a plan, once, from the files'
// access and outputs: the planned files, row groups, pages and coalesced
// byte ranges in file order, the per-tier figures of the tier loop, and
// the cost model's verdict.
func buildResponse(in *responseInputs) *pushdown_pb.ParquetPushdownResponse {
	req, o, e, hasPredicate := in.req, in.o, in.e, in.hasPredicate
	plans, live, outs, planned, projectedIDs := in.plans, in.live, in.outs, in.planned, in.projectedIDs
	tiers, hits, misses, delStats, start := in.tiers, in.hits, in.misses, in.delStats, in.start
	// One allocation for the FileRanges of every file not sharing its own.
	nranges, nshared := 0, 0
	for _, out := range outs {
		if out != nil && out.rowGroupsLeft > 0 {
			if out.fileRanges != nil {
				nshared += len(out.fileRanges)
			} else {
				nranges += len(out.ranges)
			}
		}
	}
	rangeSlab := make([]pushdown_pb.FileRange, nranges)
	nranges += nshared
	resp := &pushdown_pb.ParquetPushdownResponse{Stats: &pushdown_pb.PushdownStats{},
		Files: make([]*pushdown_pb.PlannedFile, 0, len(live)), RowGroups: make([]*pushdown_pb.RowGroupRef, 0, len(live)),
		FileRanges: make([]*pushdown_pb.FileRange, 0, nranges)}
	st := resp.Stats
	used, missing := map[string]bool{}, map[string]int{}
	var rowsPlanned, rowsTotal, survivingFileBytes int64
	// Files mostly carry the same notes (the same strings, see
	// noteStrings): a run of equal lists is counted once.
	var lastUsed, lastMissing []string
	missingRun := 0
	li := -1 // index in live
	for _, fp := range plans {
		st.FilesTotal++
		rowsTotal += fp.File.RecordCount
		out := fp.output
		if fp.skip { // pruned by the manifest tier
			st.FilesPruned++
			st.BytesTotal += manifestProjectedBytes(fp.File, projectedIDs)
			st.RowGroupsTotal += int64(len(fp.File.SplitOffsets))
			st.RowGroupsPruned += int64(len(fp.File.SplitOffsets))
			continue
		}
		li++
		nrg := len(fp.rowGroups)
		st.RowGroupsTotal += int64(nrg)
		st.BytesTotal += out.bytesTotal
		st.BytesPlainScan += out.bytesTotal
		st.PagesTotal += out.pagesTotal
		st.PagesPruned += out.pagesTotal - out.pagesPlanned
		st.RowGroupsPruned += int64(nrg - out.rowGroupsLeft)
		if !slices.Equal(fp.Used, lastUsed) {
			for _, u := range fp.Used {
				used[u] = true
			}
			lastUsed = fp.Used
		}
		if !slices.Equal(fp.Missing, lastMissing) {
			for _, m := range lastMissing {
				missing[m] += missingRun
			}
			lastMissing, missingRun = fp.Missing, 0
		}
		missingRun++
		if out.rowGroupsLeft == 0 {
			st.FilesPruned++
			continue
		}
		survivingFileBytes += fp.File.Size
		rowsPlanned += out.rowsPlanned
		resp.RowGroups = append(resp.RowGroups, out.rowGroups...)
		resp.Pages = append(resp.Pages, out.pages...)
		if out.fileRanges != nil {
			resp.FileRanges = append(resp.FileRanges, out.fileRanges...)
			st.BytesPlanned += out.bytesPlanned
		} else {
			for _, r := range out.ranges {
				fr := &rangeSlab[0]
				rangeSlab = rangeSlab[1:]
				fr.File, fr.Offset, fr.Length = fp.File.Path, r.Off, r.Len
				resp.FileRanges = append(resp.FileRanges, fr)
				st.BytesPlanned += r.Len
			}
		}
		resp.Files = append(resp.Files, planned[li])
	}
	for _, m := range lastMissing {
		missing[m] += missingRun
	}
	st.Tiers = tierStats(tiers, st.PagesPruned)
	if rowsTotal > 0 {
		st.EstimatedSelectivity = float64(rowsPlanned) / float64(rowsTotal)
	} else {
		st.EstimatedSelectivity = 0
	}
	for u := range used {
		st.IndexesUsed = append(st.IndexesUsed, u)
	}
	for m, n := range missing {
		st.IndexesMissing = append(st.IndexesMissing, fmt.Sprintf("%s (%d of %d files)", m, n, len(live)))
	}
	sort.Strings(st.IndexesUsed)
	sort.Strings(st.IndexesMissing)
	st.ResidualPredicates = predicate.Residuals(e)
	st.FooterCacheHits, st.FooterCacheMisses = hits, misses
	st.DeleteFilesApplied, st.DeleteBitmapCacheHits, st.DeleteBitmapCacheMisses = delStats.FilesApplied, delStats.CacheHits, delStats.CacheMisses
	for _, fp := range live {
		if fp.deleted != nil {
			st.RowsDeleted += int64(fp.deleted.GetCardinality())
		}
	}
	for _, d := range delStats.Degraded {
		st.IndexesMissing = append(st.IndexesMissing, d)
	}
	if req.RowIDs {
		addRowRefs(resp, plans, req.MaxRowIDs)
	}
	projectionPrunes := survivingFileBytes > 0 && float64(st.BytesPlanned) < 0.8*float64(survivingFileBytes)
	st.PushdownRecommended, st.CostReason = decideCost(o, hasPredicate, st.BytesPlanned, st.BytesTotal, len(resp.Files), int(st.FilesTotal), st.EstimatedSelectivity, projectionPrunes)
	st.PlanMicros = time.Since(start).Microseconds()
	return resp
}

// tierStats are the tiers' figures in planning order. Pages pruned are
// attributed to the page index tier (row groups skipped earlier drop
// their pages too; those count with their tier's row groups).
func tierStats(tiers map[string]*tierCounter, pagesPruned int64) []*pushdown_pb.TierStats {
	out := make([]*pushdown_pb.TierStats, 0, len(Tiers))
	for _, t := range Tiers {
		c := tiers[t]
		ts := &pushdown_pb.TierStats{Tier: t, FilesPruned: c.files, RowGroupsPruned: c.rowGroups, Micros: c.dur.Microseconds()}
		if t == TierPageIndex {
			ts.PagesPruned = pagesPruned
		}
		out = append(out, ts)
	}
	return out
}
