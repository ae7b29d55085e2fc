package indexing

import (
	"testing"

	"github.com/apache/iceberg-go"
)

func TestAnEntryServesOnlyACommittedBuildOfTheSameIdentityAndParameters(t *testing.T) {
	sp := Spec{FieldID: 3, Kind: "bitmap", Params: map[string]string{"max_distinct": "1000"}}
	e := Entry{FieldID: 3, Kind: "bitmap", Identity: "id1", State: StateCommitted, Params: map[string]string{"max_distinct": "1000"}}
	if !e.Serves(sp, "id1") {
		t.Fatal("a committed entry of the same identity and params does not serve")
	}
	for name, x := range map[string]Entry{
		"other identity": {Identity: "id2", State: StateCommitted, Params: e.Params},
		"failed":         {Identity: "id1", State: StateFailed, Params: e.Params},
		"other params":   {Identity: "id1", State: StateCommitted, Params: map[string]string{"max_distinct": "2"}},
		"no params":      {Identity: "id1", State: StateCommitted},
	} {
		if x.Serves(sp, "id1") {
			t.Errorf("an entry with %s serves", name)
		}
	}
	if !(Entry{Identity: "id1", State: StateCommitted}).Serves(Spec{Kind: "bitmap"}, "id1") {
		t.Error("an entry without params does not serve a spec without params")
	}
}

func TestWantedKeepsTheParamsOfEachSpec(t *testing.T) {
	specs, err := Wanted(iceberg.Properties{Property: Encode([]Spec{{FieldID: 3, Kind: "bitmap", Params: map[string]string{"max_distinct": "2"}}})})
	if err != nil || len(specs) != 1 || specs[0].Params["max_distinct"] != "2" {
		t.Fatalf("Wanted: %+v, %v", specs, err)
	}
}
