package volume

import (
	"fmt"
	"strings"
	"testing"
)

// schemaJSONOf is an Iceberg schema of about n bytes of JSON (salted, so
// each is another schema to the cache).
func schemaJSONOf(n, salt int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"struct","schema-id":%d,"fields":[`, salt)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"c%d_%d","required":false,"type":"long"}`, i+1, salt, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// The schemas requests carry are kept by what they hold, not by their
// count: distinct schemas of 900 KiB of JSON (each ~6 MiB parsed) fill the
// cache after a few, and a schema over maxCachedSchemaBytes is parsed per
// call and not kept.
func TestParsedSchemasKeptAreBoundedByWhatTheyHold(t *testing.T) {
	parsedSchemas.Clear()
	t.Cleanup(parsedSchemas.Clear)
	for i := 0; i < 40; i++ {
		if _, _, err := schemaOf(schemaJSONOf(900<<10, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	st := parsedSchemas.Stats()
	if st.Bytes > schemaCacheBytes || st.Entries > schemaCacheBytes/(8*900<<10) {
		t.Fatalf("%d schemas kept holding %d estimated bytes: want at most %d within %d", st.Entries, st.Bytes, schemaCacheBytes/(8*900<<10), schemaCacheBytes)
	}
	if st.Entries < 1 {
		t.Fatal("no schema kept")
	}
	parsedSchemas.Clear()
	if _, _, err := schemaOf(schemaJSONOf(maxCachedSchemaBytes+1, 99), nil); err != nil {
		t.Fatal(err)
	}
	if parsedSchemas.Len() != 0 {
		t.Fatal("a schema over maxCachedSchemaBytes was kept")
	}
}
