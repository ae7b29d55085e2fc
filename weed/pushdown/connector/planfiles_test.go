package connector

import (
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"google.golang.org/protobuf/proto"
)

// flatAndNested is one plan in both wire shapes: the flat lists naming
// their files, and the same entries nested in each PlannedFile.
func flatAndNested() (flat, nested *pushdown_pb.ParquetPushdownResponse) {
	rgs := []*pushdown_pb.RowGroupRef{{File: "b", RowGroup: 1}, {File: "a", RowGroup: 0, RowsExact: true}, {File: "b", RowGroup: 3}}
	pages := []*pushdown_pb.PageRef{{File: "a", Page: 2, Offset: 100, Length: 10}, {File: "b", Page: 5}}
	ranges := []*pushdown_pb.FileRange{{File: "a", Offset: 40, Length: 2}, {File: "a", Offset: 4, Length: 8}, {File: "b", Offset: 7, Length: 1}}
	flat = &pushdown_pb.ParquetPushdownResponse{
		Files:     []*pushdown_pb.PlannedFile{{File: "a", RowGroupsPlanned: 1}, {File: "b", RowGroupsPlanned: 2}, {File: "c"}},
		RowGroups: rgs, Pages: pages, FileRanges: ranges,
	}
	nested = &pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{
		{File: "a", RowGroupsPlanned: 1, RowGroups: rgs[1:2], Pages: pages[:1], Ranges: ranges[:2]},
		{File: "b", RowGroupsPlanned: 2, RowGroups: []*pushdown_pb.RowGroupRef{rgs[0], rgs[2]}, Pages: pages[1:], Ranges: ranges[2:]},
		{File: "c"},
	}}
	return flat, nested
}

func TestAPlanReadsTheSameFilesWhetherTheCatalogNestedItOrNot(t *testing.T) {
	flat, nested := flatAndNested()
	fp, np := PlanFiles(flat), PlanFiles(nested)
	if len(fp) != 3 || len(np) != 3 {
		t.Fatalf("%d and %d files, want 3", len(fp), len(np))
	}
	for i := range fp {
		if fp[i].File.GetFile() != np[i].File.GetFile() {
			t.Fatalf("file %d: %s flat, %s nested", i, fp[i].File.GetFile(), np[i].File.GetFile())
		}
		same := func(what string, a, b []proto.Message) {
			if len(a) != len(b) {
				t.Fatalf("%s of %s: %d flat, %d nested", what, fp[i].File.GetFile(), len(a), len(b))
			}
			for j := range a {
				if !proto.Equal(a[j], b[j]) {
					t.Fatalf("%s %d of %s: %v flat, %v nested", what, j, fp[i].File.GetFile(), a[j], b[j])
				}
			}
		}
		same("row groups", msgs(fp[i].RowGroups), msgs(np[i].RowGroups))
		same("pages", msgs(fp[i].Pages), msgs(np[i].Pages))
		same("ranges", msgs(fp[i].Ranges), msgs(np[i].Ranges))
	}
	if got := fp[1].RowGroups; got[0].GetRowGroup() != 1 || got[1].GetRowGroup() != 3 {
		t.Fatalf("b's row groups out of plan order: %v", got)
	}
	// and the reads made of them: the ranges sorted by offset either way
	ff, nf := filesOf(flat), filesOf(nested)
	for i := range ff {
		if len(ff[i].given) != len(nf[i].given) {
			t.Fatalf("file %d: %d ranges flat, %d nested", i, len(ff[i].given), len(nf[i].given))
		}
		for j := range ff[i].given {
			if ff[i].given[j] != nf[i].given[j] || (j > 0 && ff[i].given[j].Off < ff[i].given[j-1].Off) {
				t.Fatalf("file %d range %d: %v flat, %v nested", i, j, ff[i].given, nf[i].given)
			}
		}
	}
}

func TestFlatPlanEntriesNamingNoPlannedFileAreReadByNoOne(t *testing.T) {
	flat, _ := flatAndNested()
	flat.RowGroups = append(flat.RowGroups, &pushdown_pb.RowGroupRef{File: "ghost"})
	flat.FileRanges = append(flat.FileRanges, &pushdown_pb.FileRange{File: "ghost", Length: 1})
	n := 0
	for _, f := range PlanFiles(flat) {
		n += len(f.RowGroups)
	}
	if n != 3 {
		t.Fatalf("%d row groups planned, want the 3 of planned files", n)
	}
}

func msgs[M proto.Message](in []M) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}
