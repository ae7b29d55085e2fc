package cli

import (
	"errors"
	"testing"
)

// In an error a service answered, gRPC's "rpc error: code = X desc ="
// becomes the code in words, and a table file's full location its last two
// segments; other errors are left whole.
func TestRPCErrorsAreSummarised(t *testing.T) {
	for raw, want := range map[string]string{
		`catalog pushdown service at h:1: rpc error: code = FailedPrecondition desc = s3://warehouse/demo/events-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/data/part-00001.parquet holds 10 rows, the table metadata says 12`: `catalog pushdown service at h:1: failed precondition: …/data/part-00001.parquet holds 10 rows, the table metadata says 12`,
		`ReadRanges s3://warehouse/ns/t-1/data/a.parquet: rpc error: code = PermissionDenied desc = identity "alice" may not read "s3://warehouse/ns/t-1/data/a.parquet"`:                                                `ReadRanges …/data/a.parquet: permission denied: identity "alice" may not read "…/data/a.parquet"`,
		`plain read of ns.t: no column "x"`:                                          `plain read of ns.t: no column "x"`,
		`path "s3://fake-bucket/d/0/t.parquet" is not under the table prefix "data"`: `path "s3://fake-bucket/d/0/t.parquet" is not under the table prefix "data"`,
	} {
		if got := explain(errors.New(raw)); got != want {
			t.Errorf("%s\n got  %s\n want %s", raw, got, want)
		}
	}
}
