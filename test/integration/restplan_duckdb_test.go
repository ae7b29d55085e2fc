package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// DuckDB's iceberg extension as a client: pinned duckdb and the
// duckdb-extension-{iceberg,httpfs,avro} packages (extensions shipped in
// the wheel: nothing is downloaded at run time) in a virtualenv .ci/run
// makes under .tools/duckdb.

const duckdbVersion = "1.5.5"

// duckdbPython returns the Python interpreter with DuckDB and its iceberg
// extension, or skips.
func duckdbPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("LAKEWEED_DUCKDB_PYTHON")
	if py == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(root, ".tools", "duckdb", "bin", "python")
	}
	out, err := exec.Command(py, "-c", "import duckdb, duckdb_extension_iceberg, duckdb_extension_httpfs, duckdb_extension_avro; print(duckdb.__version__)").Output()
	if err != nil || strings.TrimSpace(string(out)) != duckdbVersion {
		t.Skipf("DuckDB %s with its iceberg extension is missing (%s: %v %s): run .ci/run, or python3 -m venv .tools/duckdb && .tools/duckdb/bin/pip install duckdb==%s duckdb-extension-iceberg==%s duckdb-extension-httpfs==%s duckdb-extension-avro==%s",
			duckdbVersion, py, err, strings.TrimSpace(string(out)), duckdbVersion, duckdbVersion, duckdbVersion, duckdbVersion)
	}
	return py
}

// DuckDB ATTACHes the Iceberg REST catalog and reads exactly the rows of
// iceberg-go's local planning.
func TestDuckDBReadsTheRowsOfIcebergGoThroughTheRESTCatalog(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	py := duckdbPython(t)
	c := sharedCluster(t)
	const name = "restplan_duck.events"
	tbl := clientTable(t, c, name)
	root, _ := harness.RepoRoot()
	args := []string{filepath.Join(root, "test", "clients", "duckdb", "scan.py"), "--uri", c.IcebergURI(), "--warehouse", c.Warehouse,
		"--s3", c.S3Endpoint(), "--table", name, "--select", "id"}
	for _, q := range clientQueries {
		args = append(args, "--filter", q.sql)
	}
	got := runClient(t, "DuckDB", py, args...)
	if len(got) != len(clientQueries) {
		t.Fatalf("DuckDB answered %d scans of %d", len(got), len(clientQueries))
	}
	for i, q := range clientQueries {
		want := scanWith(t, tbl, q.iceberg, table.ScanPlanningLocal, "id")
		slices.Sort(got[i].IDs)
		if len(want.ids) == 0 || !slices.Equal(got[i].IDs, want.ids) {
			t.Fatalf("DuckDB %q: read %d rows, iceberg-go %d", q.sql, len(got[i].IDs), len(want.ids))
		}
		t.Logf("DuckDB %q: %d rows", q.sql, len(want.ids))
	}
}
