//go:build !cgo

package duckdb

import "testing"

// Without cgo DuckDB cannot be embedded: the comparison does not run.
func TestOffsetReturnsTheRowsDuckDBReturnsOverTheSameFiles(t *testing.T) {
	t.Skip("DuckDB (duckdb-go) needs cgo: build with CGO_ENABLED=1 and a C compiler to compare with it")
}

func TestAggregatesThroughTheConnectorEqualDuckDBsWithDeletesApplied(t *testing.T) {
	t.Skip("DuckDB (duckdb-go) needs cgo: build with CGO_ENABLED=1 and a C compiler to compare with it")
}
