package catalog

import (
	"encoding/json"

	"github.com/apache/iceberg-go"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// schemaJSONs keeps the JSON of the schemas the calls to volume services
// carry, by schema: the table resolver keeps one *iceberg.Schema per
// metadata file, so a table's plans encode its schema once, not once per
// plan and call. A key keeps its schema alive, so its address is never
// reused for another schema while the entry exists; schemas are not
// changed once parsed. Only schemas of at most maxKeptSchemaJSON bytes of
// JSON are kept, so the cache stays within 256 × that.
var schemaJSONs, _ = lru.New[*iceberg.Schema, []byte](256)

// encodeSchema is s as JSON (shared: callers must not change it).
func encodeSchema(s *iceberg.Schema) ([]byte, error) {
	if b, ok := schemaJSONs.Get(s); ok {
		return b, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, perr.New(perr.Internal, "encode schema: %v", err)
	}
	if len(b) <= maxKeptSchemaJSON {
		schemaJSONs.Add(s, b)
	}
	return b, nil
}

const maxKeptSchemaJSON = 64 << 10
