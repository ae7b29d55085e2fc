package plan

import (
	"fmt"
	"sort"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// addRowRefs answers request_row_ids: for every surviving file whose side
// indexes answered the whole predicate exactly, its matching positions
// minus its deleted ones, in file order and position order, as row_refs
// (file-absolute positions with their row group); at most max of them,
// truncated set when cut (max <= 0: no cap beyond the caller's limit).
// A surviving file without an exact answer gets no row refs and is
// counted in a note in indexes_missing, so a caller knows the refs do not
// cover it.
//
//	FilePlan.SideIndex (exact) ─▶ minus Deleted ─▶ RowRef{file, row group, position} … ─▶ cut at max
func addRowRefs(resp *pushdown_pb.ParquetPushdownResponse, plans []*FilePlan, max int64) {
	inexact, surviving := 0, 0
	for _, pf := range resp.GetFiles() {
		if pf.GetRowGroupsPlanned() > 0 {
			surviving++
		}
	}
	byPath := map[string]*FilePlan{}
	for _, fp := range plans {
		if !fp.skip {
			byPath[fp.File.Path] = fp
		}
	}
	for _, pf := range resp.GetFiles() {
		fp := byPath[pf.GetFile()]
		if fp == nil || pf.GetRowGroupsPlanned() == 0 {
			continue
		}
		if !fp.SideIndexExact || fp.SideIndex == nil {
			inexact++
			continue
		}
		if resp.Truncated {
			continue
		}
		pos := fp.SideIndex
		if fp.deleted != nil && !fp.deleted.IsEmpty() {
			pos = pos.Clone()
			pos.AndNot(fp.deleted)
		}
		md := fp.Footer.Meta
		firsts := make([]int64, md.NumRowGroups()+1)
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			firsts[rg+1] = firsts[rg] + fp.Footer.RowGroupRows(rg)
		}
		it := pos.Iterator()
		for it.HasNext() {
			p := int64(it.Next())
			if max > 0 && int64(len(resp.RowRefs)) >= max {
				resp.Truncated = true
				break
			}
			rg := sort.Search(len(firsts)-1, func(i int) bool { return firsts[i+1] > p })
			if rg >= md.NumRowGroups() {
				break // past the file's rows: an index answering beyond them says nothing more
			}
			resp.RowRefs = append(resp.RowRefs, &pushdown_pb.ScoredRowRef{Ref: &pushdown_pb.RowRef{File: fp.File.Path, RowGroup: int32(rg), FilePosition: p}})
		}
	}
	if inexact > 0 {
		resp.Stats.IndexesMissing = append(resp.Stats.IndexesMissing,
			fmt.Sprintf("row ids: no exact side-index answer for the whole predicate (%d of %d files; no row refs for them)", inexact, surviving))
	}
}
