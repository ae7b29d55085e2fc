package catalog

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestASchemaIsEncodedOnceAndEachSchemaAsItself: encodeSchema gives a
// schema's own JSON, the same bytes again for the same schema, and another
// schema its own.
func TestASchemaIsEncodedOnceAndEachSchemaAsItself(t *testing.T) {
	a := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	b := iceberg.NewSchema(2, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	for _, s := range []*iceberg.Schema{a, b} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		first, err := encodeSchema(s)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := encodeSchema(s)
		if !bytes.Equal(first, want) || !bytes.Equal(again, want) {
			t.Errorf("schema %d encodes as %s then %s, want %s", s.ID, first, again, want)
		}
		if &first[0] != &again[0] {
			t.Errorf("schema %d was encoded twice", s.ID)
		}
	}
}
