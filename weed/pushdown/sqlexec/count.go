package sqlexec

// COUNT(*) from the plan, reading no data: the catalog plans the query
// (manifests, footers, side indexes, deletes) and says, per row group, its
// rows, the rows planned, whether side indexes answered the predicate
// exactly, and the deleted positions. With no WHERE every row of a planned
// row group matches; with one, only row groups whose rows are exact count.
// Any row group that is not exact, a truncated plan, or a plan that cannot
// be made means the rows are read and counted instead (the reason in
// Stats.CountNote).
//
//	Explain(WHERE) ─▶ for each planned row group:
//	                    rows = planned rows (whole, ranges or positions)
//	                         − deleted positions among them
//	               ─▶ Σ rows

import (
	"context"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// planCount counts st's rows from its plan. note, when set, says why it
// could not (then read and count: the plan, resp, is handed to the
// volumes' aggregation so it is not made twice).
func planCount(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, column string, o Options) (n int64, stats connector.Stats, note string, resp *pushdown_pb.ParquetPushdownResponse, err error) {
	start := time.Now()
	q := query(st, o)
	q.Vector, q.Select = nil, []string{column}
	resp, err = conn.Explain(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return 0, stats, "", nil, ctx.Err()
		}
		return 0, stats, "no plan: " + err.Error(), nil, nil
	}
	n, note = countPlanned(resp, st.Where != "")
	rowGroups := 0
	for _, fp := range connector.PlanFiles(resp) {
		rowGroups += len(fp.RowGroups)
	}
	stats = connector.Stats{Pushdown: true, Files: len(resp.GetFiles()), RowGroups: rowGroups,
		PlanMs: time.Since(start).Milliseconds(), ElapsedMs: time.Since(start).Milliseconds()}
	return n, stats, note, resp, nil
}

// countPlanned is the rows a plan's row groups hold that match and are not
// deleted; note says why it cannot tell.
func countPlanned(resp *pushdown_pb.ParquetPushdownResponse, filtered bool) (int64, string) {
	if resp.GetTruncated() {
		return 0, "the plan was truncated"
	}
	// Every row group the plan kept must be listed: a file whose listed row
	// groups fall short of what it says it planned would be undercounted,
	// and one the plan does not name would be read by no one.
	files := connector.PlanFiles(resp)
	listed := 0
	for _, fp := range files {
		if got := int32(len(fp.RowGroups)); got != fp.File.GetRowGroupsPlanned() {
			return 0, fmt.Sprintf("the plan lists %d of the %d row groups it planned in %s", got, fp.File.GetRowGroupsPlanned(), shortFile(fp.File.GetFile()))
		}
		listed += len(fp.RowGroups)
	}
	if len(resp.GetRowGroups()) > listed {
		return 0, "the plan lists row groups of a file it does not name"
	}
	var total int64
	for _, fp := range files {
		for _, rg := range fp.RowGroups {
			rows, note := rowGroupCount(rg, fp.File.GetFile(), filtered)
			if note != "" {
				return 0, note
			}
			total += rows
		}
	}
	return total, ""
}

// rowGroupCount is the planned, not deleted rows of rg (of file) that
// match; note says why it cannot tell.
func rowGroupCount(rg *pushdown_pb.RowGroupRef, file string, filtered bool) (int64, string) {
	if filtered && !rg.GetRowsExact() {
		return 0, fmt.Sprintf("row group %d of %s is not answered exactly by side indexes", rg.GetRowGroup(), shortFile(file))
	}
	planned := roaring64.New() // row-group-local rows; empty: the whole group
	whole := true
	switch {
	case len(rg.GetRowPositions()) > 0:
		bm, err := rowbits.Decode(rg.GetRowPositions())
		if err != nil {
			return 0, "row positions: " + err.Error()
		}
		planned, whole = bm, false
	case len(rg.GetRowRanges()) > 0:
		for _, r := range rg.GetRowRanges() {
			if r.GetEnd() < r.GetStart() || r.GetStart() < 0 || r.GetEnd() > rg.GetRowCount() {
				return 0, "a row range outside its row group"
			}
			planned.AddRange(uint64(r.GetStart()), uint64(r.GetEnd()))
		}
		whole = false
	}
	rows := rg.GetRowCount()
	if !whole {
		rows = int64(planned.GetCardinality())
	}
	if len(rg.GetDeletedPositions()) > 0 {
		del, err := rowbits.Decode(rg.GetDeletedPositions())
		if err != nil {
			return 0, "deleted positions: " + err.Error()
		}
		first := uint64(rg.GetFirstRow())
		it := del.Iterator()
		for it.HasNext() {
			p := it.Next()
			if p < first || p >= first+uint64(rg.GetRowCount()) {
				continue
			}
			if whole || planned.Contains(p-first) {
				rows--
			}
		}
	}
	return rows, ""
}

func shortFile(f string) string {
	if len(f) > 64 {
		return "…" + f[len(f)-63:]
	}
	return f
}
