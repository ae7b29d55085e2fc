package descriptor

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// FuzzDecodePartition: a client's partition values decode under the spec
// or are refused with a short message, never a panic.
func FuzzDecodePartition(f *testing.F) {
	for _, s := range []string{`{}`, `{"1001": true, "1014": "12.34"}`, `{"1006": "2026-01-02", "1008": "2026-01-02T03:04:05.000006"}`,
		`{"1011": "not-a-uuid"}`, `{"x": 1}`, `[1,2]`, `{"1003": 1e400}`, `{"1014": "1e99999999"}`, `null`} {
		f.Add([]byte(s))
	}
	spec := partitionSpec()
	src := SchemasSourceType([]*iceberg.Schema{partitionSchema()})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodePartition(b, spec, src); err != nil && len(err.Error()) > 600 {
			t.Fatalf("a refusal of %d bytes", len(err.Error()))
		}
	})
}
