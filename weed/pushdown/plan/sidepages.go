package plan

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// SidePageIndexSource serves the page indexes of files written without
// one, from page_index side indexes: what the page tier and the page
// refs of the response then use exactly as a native page index.
//
//	live files without a native page index
//	   │ projected + predicate leaf columns whose field has a
//	   │ page_index wanted and none attached to the footer yet
//	   ▼
//	SidePageIndexSource.PageIndexes ──▶ per row group Thrift OffsetIndex
//	   │                                 + ColumnIndex
//	   ▼
//	footer.AttachSidePageIndex (kept with that version of the file,
//	so a warm plan asks nothing) ──▶ page tier, page refs, file ranges
type SidePageIndexSource interface {
	// PageIndexFields are the field ids that may have a page_index side
	// index.
	PageIndexFields() []int
	// PageIndexes returns, index-aligned with files, the committed side
	// page indexes of the fields asked of each file (field id → one entry
	// per row group), and per file what could not be served.
	PageIndexes(ctx context.Context, files []*DataFile, fields [][]int) ([]map[int][]footer.SidePageIndex, [][]string, error)
}

// attachSidePageIndexes fetches and attaches the side page indexes the
// files' footers lack. Anything not served costs page granularity, never
// rows: it is noted in the file's Missing.
func attachSidePageIndexes(ctx context.Context, src SidePageIndexSource, req *Request, live []*FilePlan, fieldIDs []int, idsKey string) error {
	if src == nil || len(live) == 0 {
		return nil
	}
	wanted := map[int]bool{}
	for _, id := range src.PageIndexFields() {
		wanted[id] = true
	}
	if len(wanted) == 0 {
		return nil
	}
	var files []*DataFile
	var asked [][]int
	var plans []*FilePlan
	var cols []map[int]int // field → leaf column, per asked file
	for _, fp := range live {
		if fp.Footer.HasNativePageIndex() {
			continue
		}
		cm := fileStateOf(fp.Footer, req.Table.NameMapping, req.Table.nameMappingKey).columns
		indexed := sidePageColumns(cm, fp.Footer.Meta.Schema, wanted)
		var fields []int
		byField := map[int]int{}
		for _, col := range projectionOf(&FilePlan{Footer: fp.Footer, Columns: cm}, fieldIDs, idsKey) {
			id, ok := indexed[col]
			if !ok || fp.Footer.HasSidePageIndex(col) {
				continue
			}
			fields = append(fields, id)
			byField[id] = col
		}
		if len(fields) == 0 {
			continue
		}
		files, asked, plans, cols = append(files, fp.File), append(asked, fields), append(plans, fp), append(cols, byField)
	}
	if len(files) == 0 {
		return nil
	}
	got, missing, err := src.PageIndexes(ctx, files, asked)
	if err != nil {
		return err
	}
	for i, fp := range plans {
		if i < len(missing) {
			fp.Missing = append(fp.Missing, missing[i]...)
		}
		if i >= len(got) {
			continue
		}
		for id, groups := range got[i] {
			col, ok := cols[i][id]
			if !ok {
				continue
			}
			if err := fp.Footer.AttachSidePageIndex(col, groups); err != nil {
				fp.Missing = append(fp.Missing, fmt.Sprintf("page_index(field %d): %v", id, err))
			}
		}
	}
	return nil
}

// sidePageColumns maps the leaf columns a page_index side index can stand
// for to the wanted field it indexes: a primitive field's leaf, or the
// element column of a flat list field (one leaf, one repetition level:
// the page_index kind merges its pages to row boundaries).
func sidePageColumns(cm *ColumnMap, s *schema.Schema, wanted map[int]bool) map[int]int {
	out := map[int]int{}
	for id := range wanted {
		if col, ok := cm.Leaf(id); ok {
			out[col] = id
			continue
		}
		if leaves := cm.Leaves(id); len(leaves) == 1 && s.Column(leaves[0]).MaxRepetitionLevel() == 1 {
			out[leaves[0]] = id
		}
	}
	return out
}
