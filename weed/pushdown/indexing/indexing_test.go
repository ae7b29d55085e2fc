package indexing

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

func TestAnEntryServesOnlyACommittedHashedBuildOfTheSameIdentityAndParameters(t *testing.T) {
	sp := Spec{FieldID: 3, Kind: "bitmap", Params: map[string]string{"max_distinct": "1000"}}
	c := sideindex.CommitOf([]byte("payload"))
	e := Entry{FieldID: 3, Kind: "bitmap", Identity: "id1", State: StateCommitted, Params: map[string]string{"max_distinct": "1000"},
		PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256}
	if !e.Serves(sp, "id1") {
		t.Fatal("a committed entry of the same identity and params does not serve")
	}
	for name, x := range map[string]Entry{
		"other identity":  {Identity: "id2", State: StateCommitted, Params: e.Params, PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256},
		"failed":          {Identity: "id1", State: StateFailed, Params: e.Params, PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256},
		"other params":    {Identity: "id1", State: StateCommitted, Params: map[string]string{"max_distinct": "2"}, PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256},
		"no params":       {Identity: "id1", State: StateCommitted, PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256},
		"no payload hash": {Identity: "id1", State: StateCommitted, Params: e.Params, PayloadBytes: c.Bytes},
		"a bad hash":      {Identity: "id1", State: StateCommitted, Params: e.Params, PayloadBytes: c.Bytes, PayloadSHA256: "zz" + c.SHA256[2:]},
		"no size":         {Identity: "id1", State: StateCommitted, Params: e.Params, PayloadSHA256: c.SHA256},
	} {
		if x.Serves(sp, "id1") {
			t.Errorf("an entry with %s serves", name)
		}
	}
	if !(Entry{Identity: "id1", State: StateCommitted, PayloadBytes: c.Bytes, PayloadSHA256: c.SHA256}).Serves(Spec{Kind: "bitmap"}, "id1") {
		t.Error("an entry without params does not serve a spec without params")
	}
}

func TestWantedKeepsTheParamsOfEachSpec(t *testing.T) {
	specs, err := Wanted(iceberg.Properties{Property: Encode([]Spec{{FieldID: 3, Kind: "bitmap", Params: map[string]string{"max_distinct": "2"}}})})
	if err != nil || len(specs) != 1 || specs[0].Params["max_distinct"] != "2" {
		t.Fatalf("Wanted: %+v, %v", specs, err)
	}
}
