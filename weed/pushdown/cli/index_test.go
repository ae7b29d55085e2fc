package cli

import (
	"encoding/json"
	"strings"
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

func TestParamFlagTakesRepeatedKeyValuesAndRefusesMalformedOnes(t *testing.T) {
	p := paramFlag{}
	for _, s := range []string{"max_distinct=100000", " rows_per_group = 512 ", "max_distinct=100000", "nlist=16, m=8"} {
		if err := p.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	if got := p.String(); got != "m=8,max_distinct=100000,nlist=16,rows_per_group=512" {
		t.Fatalf("params %q", got)
	}
	for s, want := range map[string]string{
		"max_distinct":   "want key=value",
		"=3":             "want key=value",
		"fpp=":           "want key=value",
		"max_distinct=7": "parameter max_distinct given twice (100000 and 7)",
	} {
		if err := p.Set(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%.20q): %v; want %q", s, err, want)
		}
	}
	if err := p.Set(strings.Repeat("y", 500)); err == nil || len(err.Error()) > 120 {
		t.Errorf("a malformed long parameter: %v (want a short error)", err)
	}
}

func TestPrintIndexesShowsParamsAndTheReasonsOfFailedBuilds(t *testing.T) {
	list := &pushdown_pb.ListIndexesResponse{
		FilesTotal: 2,
		Wanted:     []*pushdown_pb.IndexSpec{{FieldId: 3, Kind: "bitmap", Params: map[string]string{"max_distinct": "2"}}, {FieldId: 1, Kind: "btree"}},
		Entries: []*pushdown_pb.IndexEntry{
			{DataFile: "a", FieldId: 3, Kind: "bitmap", State: "failed", Reason: "bitmap: field 3 of \"a\" has 58 distinct values, over max_distinct=2"},
			{DataFile: "b", FieldId: 3, Kind: "bitmap", State: "failed", Reason: "bitmap: field 3 of \"b\" has 59 distinct values, over max_distinct=2"},
			{DataFile: "a", FieldId: 1, Kind: "btree", State: "committed", PayloadBytes: 100},
		},
	}
	var b strings.Builder
	PrintIndexes(&b, list, map[int]string{1: "id", 3: "tenant_id"})
	out := b.String()
	for _, want := range []string{"COLUMN", "PARAMS", "tenant_id  3", "id         1", "max_distinct=2", "0 of 2", "failed 2", "1 of 2", "committed 1",
		`bitmap on tenant_id (field 3) failed: bitmap: field 3 of "a" has 58 distinct values`, `"b" has 59 distinct values`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	j, err := indexesJSON(list, map[int]string{1: "id", 3: "tenant_id"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Wanted []struct {
			FieldID      int            `json:"field_id"`
			Column       string         `json:"column"`
			FilesIndexed int64          `json:"files_indexed"`
			PayloadBytes int64          `json:"payload_bytes"`
			States       map[string]int `json:"states"`
		} `json:"wanted"`
		Entries []any `json:"entries"`
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Wanted) != 2 || doc.Wanted[0].Column != "tenant_id" || doc.Wanted[0].FilesIndexed != 0 || doc.Wanted[0].States["failed"] != 2 ||
		doc.Wanted[1].Column != "id" || doc.Wanted[1].FilesIndexed != 1 || doc.Wanted[1].PayloadBytes != 100 || len(doc.Entries) != 3 {
		t.Fatalf("-json: %s", j)
	}
}
