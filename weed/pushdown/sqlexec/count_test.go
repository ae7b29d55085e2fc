package sqlexec

import (
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

func bitmapBytes(t *testing.T, positions ...uint64) []byte {
	t.Helper()
	b, err := roaring64.BitmapOf(positions...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// COUNT(*) from a plan counts each kept row group's planned rows (whole,
// ranges or positions) less the deleted positions among them, and refuses
// (with a reason, so the rows are read instead) whenever it cannot be
// sure: a truncated plan, a row group not answered exactly under a WHERE,
// a range outside its row group, or a file whose planned row groups are
// not all listed.
func TestCountFromThePlanIsPlannedRowsLessDeletesOrSaysWhyNot(t *testing.T) {
	file := func(name string, planned int32) *pushdown_pb.PlannedFile {
		return &pushdown_pb.PlannedFile{File: name, RowGroupsPlanned: planned}
	}
	whole := &pushdown_pb.RowGroupRef{File: "a", RowGroup: 0, FirstRow: 0, RowCount: 100, RowsExact: true,
		// 5 and 99 inside; 100 belongs to the next row group
		DeletedPositions: bitmapBytes(t, 5, 99, 100)}
	ranges := &pushdown_pb.RowGroupRef{File: "a", RowGroup: 1, FirstRow: 100, RowCount: 100, RowsExact: true,
		RowRanges: []*pushdown_pb.RowRange{{Start: 0, End: 10}, {Start: 50, End: 60}},
		// 100 (local 0) is planned, 130 (local 30) is not
		DeletedPositions: bitmapBytes(t, 100, 130)}
	positions := &pushdown_pb.RowGroupRef{File: "b", RowGroup: 0, FirstRow: 0, RowCount: 1000, RowsExact: true,
		RowPositions: bitmapBytes(t, 1, 2, 3, 500), DeletedPositions: bitmapBytes(t, 3, 4)}
	for _, c := range []struct {
		name     string
		resp     *pushdown_pb.ParquetPushdownResponse
		filtered bool
		want     int64
		note     string
	}{
		{"whole, ranges and positions less their deletes",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("a", 2), file("b", 1)},
				RowGroups: []*pushdown_pb.RowGroupRef{whole, ranges, positions}}, true, 98 + 19 + 3, ""},
		{"the same plan nested per file",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{
				{File: "a", RowGroupsPlanned: 2, RowGroups: []*pushdown_pb.RowGroupRef{whole, ranges}},
				{File: "b", RowGroupsPlanned: 1, RowGroups: []*pushdown_pb.RowGroupRef{positions}}}}, true, 98 + 19 + 3, ""},
		{"a row group of a file the plan does not name",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("b", 1)},
				RowGroups: []*pushdown_pb.RowGroupRef{positions, whole}}, true, 0, "does not name"},
		{"no WHERE counts inexact row groups too",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("c", 1)},
				RowGroups: []*pushdown_pb.RowGroupRef{{File: "c", RowCount: 7}}}, false, 7, ""},
		{"a truncated plan",
			&pushdown_pb.ParquetPushdownResponse{Truncated: true}, false, 0, "truncated"},
		{"an inexact row group under a WHERE",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("c", 1)},
				RowGroups: []*pushdown_pb.RowGroupRef{{File: "c", RowCount: 7}}}, true, 0, "not answered exactly"},
		{"a range outside its row group",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("c", 1)},
				RowGroups: []*pushdown_pb.RowGroupRef{{File: "c", RowCount: 7, RowRanges: []*pushdown_pb.RowRange{{Start: 0, End: 8}}}}}, false, 0, "outside its row group"},
		{"a file whose planned row groups are not all listed",
			&pushdown_pb.ParquetPushdownResponse{Files: []*pushdown_pb.PlannedFile{file("a", 3)},
				RowGroups: []*pushdown_pb.RowGroupRef{whole, ranges}}, false, 0, "lists 2 of the 3 row groups"},
	} {
		got, note := countPlanned(c.resp, c.filtered)
		if got != c.want || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("%s: %d (note %q), want %d (note containing %q)", c.name, got, note, c.want, c.note)
		}
	}
}
