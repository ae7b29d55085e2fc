package sqlpred

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// FuzzParse: any WHERE text converts to an expression or is refused,
// never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"id = 1", "tenant_id IN ('a', 'b') AND NOT status = 'x'", "message LIKE '%timeout%'", "ts >= TIMESTAMP '2026-01-01 00:00:00'",
		"array_contains(tags, 'gpu')", "x IS NULL OR y IS NOT NULL", "id BETWEEN 1 AND 9", "((((", "id = ", "1 = 1", "id NOT IN (1, 2, 3)"} {
		f.Add(s)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 3, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "message", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "tags", Type: &iceberg.ListType{ElementID: 6, Element: iceberg.PrimitiveTypes.String}},
	)
	f.Fuzz(func(t *testing.T, where string) {
		if e, err := ParseFor(where, schema); err == nil {
			_ = e.String()
		}
	})
}
