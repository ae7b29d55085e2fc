package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// planSummary is what a plan says about its files, in order.
func planSummary(resp *pushdown_pb.ParquetPushdownResponse) string {
	s := fmt.Sprintf("planned %d total %d pages %d/%d;", resp.Stats.BytesPlanned, resp.Stats.BytesTotal, resp.Stats.PagesPruned, resp.Stats.PagesTotal)
	for _, rg := range resp.RowGroups {
		s += fmt.Sprintf(" %s#%d+%d del%v rr%d", rg.File, rg.RowGroup, rg.RowCount, rg.DeletedPositions, len(rg.RowRanges))
	}
	for _, fr := range resp.FileRanges {
		s += fmt.Sprintf(" [%s %d+%d]", fr.File, fr.Offset, fr.Length)
	}
	return s
}

// threeEqualFiles are three files of the same 1000 generated rows in row
// groups of 250 (variants[0]'s indexes), and the schema they are of.
func threeEqualFiles(t *testing.T) (*iceberg.Schema, memFiles, []DataFile) {
	cols := genColumns()
	_, schema := genSchemas(cols)
	v := variants[0]
	v.rowGroup = 250
	mem := memFiles{}
	var files []DataFile
	data := writeVariant(t, cols, v, 1000, 1)
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("s3://t/%d.parquet", i)
		mem[p] = data
		files = append(files, DataFile{Path: p, Size: int64(len(data)), RecordCount: 1000})
	}
	return schema, mem, files
}

// Whole-file outputs (read whole, or pruned whole) are shared between
// plans of the same projection; a plan with deletes, another projection,
// pruned row groups or a fresh planner must still see exactly what a plan
// from scratch sees.
func TestWholeFileOutputsSharedBetweenPlansAnswerLikeAFreshPlanner(t *testing.T) {
	schema, mem, files := threeEqualFiles(t)
	deleted := roaring64.BitmapOf(3, 300, 999)
	withDeletes := append([]DataFile(nil), files...)
	withDeletes[1].HasDeletes = true
	reqs := []struct {
		name string
		req  Request
	}{
		{"no predicate", Request{Table: Table{Schema: schema}, Files: files, Projection: []int{1, 2, 5}, Options: DefaultOptions()}},
		{"another projection", Request{Table: Table{Schema: schema}, Files: files, Projection: []int{2, 19}, Options: DefaultOptions()}},
		{"deletes", Request{Table: Table{Schema: schema}, Files: withDeletes, Projection: []int{1, 2, 5}, Options: DefaultOptions(), Deletes: fixedDeletes{deleted}}},
		{"pruning predicate", Request{Table: Table{Schema: schema}, Files: files, Predicate: xBetweenField(t, schema, 1, 100, 200), Projection: []int{1, 2, 5}, Options: DefaultOptions()}},
		{"every row group pruned by blooms", Request{Table: Table{Schema: schema}, Files: files, Predicate: bindOrFail(t, schema, eqString(19, "purple")), Projection: []int{1, 2, 5}, Options: DefaultOptions()}},
		{"pruned, deletes", Request{Table: Table{Schema: schema}, Files: withDeletes, Predicate: bindOrFail(t, schema, eqString(19, "purple")), Projection: []int{1, 2, 5}, Options: DefaultOptions(), Deletes: fixedDeletes{deleted}}},
		{"unselective equality", Request{Table: Table{Schema: schema}, Files: files, Predicate: bindOrFail(t, schema, eqString(19, "blue")), Projection: []int{2, 19}, Options: DefaultOptions()}},
	}
	shared := &Planner{Cache: footer.NewCache("shared", 1<<30, mem.open)}
	for round := 0; round < 2; round++ {
		for _, r := range reqs {
			got, _, err := shared.Plan(context.Background(), r.req)
			if err != nil {
				t.Fatal(err)
			}
			fresh := &Planner{Cache: footer.NewCache("fresh", 1<<30, mem.open)}
			want, _, err := fresh.Plan(context.Background(), r.req)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := planSummary(got), planSummary(want); g != w {
				t.Fatalf("round %d, %s: the shared planner planned\n%s\na fresh one\n%s", round, r.name, g, w)
			}
		}
	}
}

// A whole-file output's shared PlannedFile says what the manifest entry of
// the plan at hand says: a plan whose entry records another row count (0:
// not recorded) gets its own.
func TestSharedPlannedFilesFollowTheManifestsRecordCount(t *testing.T) {
	schema, mem, files := threeEqualFiles(t)
	unrecorded := append([]DataFile(nil), files...)
	for i := range unrecorded {
		unrecorded[i].RecordCount = 0
	}
	pl := &Planner{Cache: footer.NewCache("t", 1<<30, mem.open)}
	for _, c := range []struct {
		files []DataFile
		want  int64
	}{{files, 1000}, {unrecorded, 0}, {files, 1000}, {unrecorded, 0}} {
		req := Request{Table: Table{Schema: schema}, Files: c.files, Predicate: bindOrFail(t, schema, eqString(19, "blue")), Projection: []int{2, 19}, Options: DefaultOptions()}
		resp, _, err := pl.Plan(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Files) != 3 {
			t.Fatalf("%d files planned, want 3", len(resp.Files))
		}
		for _, pf := range resp.Files {
			if pf.RecordCount != c.want || pf.RowGroupsPlanned != 4 || pf.RowGroupsTotal != 4 {
				t.Fatalf("%s: record count %d, row groups %d of %d; want %d, 4 of 4", pf.File, pf.RecordCount, pf.RowGroupsPlanned, pf.RowGroupsTotal, c.want)
			}
		}
	}
}
