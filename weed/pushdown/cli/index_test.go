package cli

import (
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

func TestIndexProgressCountsFinishedWantedIndexesOfFilesTimesWanted(t *testing.T) {
	list := &pushdown_pb.ListIndexesResponse{
		FilesTotal: 3,
		Wanted:     []*pushdown_pb.IndexSpec{{FieldId: 1, Kind: "btree"}, {FieldId: 3, Kind: "bloom"}},
		Entries: []*pushdown_pb.IndexEntry{
			{DataFile: "a", FieldId: 1, Kind: "btree", State: "committed"},
			{DataFile: "b", FieldId: 1, Kind: "btree", State: "building"},
			{DataFile: "a", FieldId: 3, Kind: "bloom", State: "failed"},
			{DataFile: "a", FieldId: 2, Kind: "btree", State: "committed"}, // no longer wanted
		},
	}
	if done, total := indexProgress(list); done != 2 || total != 6 {
		t.Fatalf("progress %d of %d; want 2 of 6", done, total)
	}
}
