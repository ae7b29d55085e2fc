package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// Clients someone else wrote plan scans on the server: PyIceberg (pinned,
// in a virtualenv .ci/run makes under .tools/pyiceberg) and Iceberg Java's
// RESTCatalog with RESTTableScan (pinned, test/clients/java built by .ci/run
// into .tools/java). On a machine without them the tests skip, naming what
// is missing and how to install it.

const pyicebergVersion = "0.12.0"

// clientQuery is one predicate in the syntax of each client.
type clientQuery struct {
	sql     string                    // PyIceberg's parser and Iceberg Java's (our small parser) take this
	iceberg iceberg.BooleanExpression // iceberg-go's local planning is the oracle
}

var clientQueries = []clientQuery{
	{"id = 12345", iceberg.EqualTo(iceberg.Reference("id"), int64(12345))},
	{"id < 800", iceberg.LessThan(iceberg.Reference("id"), int64(800))},
	{"tenant_id = 'tenant-042'", iceberg.EqualTo(iceberg.Reference("tenant_id"), "tenant-042")},
	{"status = 'error' and id >= 8000", iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("status"), "error"), iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(8000)))},
	{"tenant_id in ('tenant-001', 'tenant-077')", iceberg.IsIn(iceberg.Reference("tenant_id"), "tenant-001", "tenant-077")},
	{"id >= 15990 or tenant_id = 'tenant-003'", iceberg.NewOr(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(15990)), iceberg.EqualTo(iceberg.Reference("tenant_id"), "tenant-003"))},
}

// clientTable loads a demo table with a btree on id and returns it.
func clientTable(t *testing.T, c *harness.Cluster, name string) *table.Table {
	t.Helper()
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", "16000", "-files", "8", "-rowGroupRows", "1000", "-indexed", "none")
	weed("index", "create", "-table", name, "-column", "id", "-kind", "btree", "-wait")
	ident, _ := splitName(name)
	tbl, err := c.Iceberg(t).LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func splitName(name string) (table.Identifier, error) {
	return strings.Split(name, "."), nil
}

// clientScan is one client's answer: files planned and ids read.
type clientScan struct {
	Files int     `json:"files"`
	IDs   []int64 `json:"ids"`
	Scan  string  `json:"scan"` // Iceberg Java: the TableScan class used
}

// checkClient runs scan (a client in server and client planning mode, over
// every query's filter) and compares its rows with iceberg-go's local
// planning.
func checkClient(t *testing.T, who string, tbl *table.Table, scan func(mode string, filters []string) []clientScan) {
	t.Helper()
	var filters []string
	for _, q := range clientQueries {
		filters = append(filters, q.sql)
	}
	servers, clients := scan("server", filters), scan("client", filters)
	if len(servers) != len(filters) || len(clients) != len(filters) {
		t.Fatalf("%s answered %d and %d scans of %d", who, len(servers), len(clients), len(filters))
	}
	for i, q := range clientQueries {
		want := scanWith(t, tbl, q.iceberg, table.ScanPlanningLocal, "id", "status")
		server, client := servers[i], clients[i]
		slices.Sort(server.IDs)
		slices.Sort(client.IDs)
		if !slices.Equal(server.IDs, want.ids) || !slices.Equal(client.IDs, want.ids) {
			t.Fatalf("%s %q: server planning read %d rows, client planning %d, iceberg-go %d", who, q.sql, len(server.IDs), len(client.IDs), len(want.ids))
		}
		if server.Files > client.Files {
			t.Fatalf("%s %q: server planning named %d files, client planning %d", who, q.sql, server.Files, client.Files)
		}
		t.Logf("%s %q: %d rows; files planned: server %d, client %d", who, q.sql, len(want.ids), server.Files, client.Files)
		if q.sql == "id = 12345" && (server.Files != 1 || client.Files != 8) {
			t.Fatalf("%s point lookup: server planning named %d files, client %d; want 1 and 8", who, server.Files, client.Files)
		}
	}
}

// pyiceberg returns the Python interpreter with PyIceberg pinned, or skips.
func pyiceberg(t *testing.T) string {
	t.Helper()
	py := os.Getenv("LAKEWEED_PYICEBERG_PYTHON")
	if py == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(root, ".tools", "pyiceberg", "bin", "python")
	}
	out, err := exec.Command(py, "-c", "import pyiceberg, pyarrow; print(pyiceberg.__version__)").Output()
	if err != nil || strings.TrimSpace(string(out)) != pyicebergVersion {
		t.Skipf("PyIceberg %s is missing (%s: %v %s): run .ci/run, or python3 -m venv .tools/pyiceberg && .tools/pyiceberg/bin/pip install 'pyiceberg[pyarrow]==%s'",
			pyicebergVersion, py, err, strings.TrimSpace(string(out)), pyicebergVersion)
	}
	return py
}

func TestPyIcebergPlansOnTheServerWithTheRowsOfIcebergGo(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	py := pyiceberg(t)
	c := sharedCluster(t)
	const name = "restplan_py.events"
	tbl := clientTable(t, c, name)
	root, _ := harness.RepoRoot()
	script := filepath.Join(root, "test", "clients", "pyiceberg", "scan.py")
	checkClient(t, "PyIceberg", tbl, func(mode string, filters []string) []clientScan {
		args := []string{script, "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(),
			"--table", name, "--mode", mode, "--select", "id,status"}
		for _, f := range filters {
			args = append(args, "--filter", f)
		}
		return runClient(t, "PyIceberg "+mode, py, args...)
	})
	// starts-with (iceberg-go's scan cannot evaluate it, so PyIceberg's own
	// planning is the oracle)
	like := "tenant_id LIKE 'tenant-04%'"
	var both [2]clientScan
	for i, mode := range []string{"server", "client"} {
		both[i] = runClient(t, "PyIceberg "+mode, py, script, "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(),
			"--table", name, "--mode", mode, "--select", "id,status", "--filter", like)[0]
	}
	if !slices.Equal(both[0].IDs, both[1].IDs) || len(both[0].IDs) == 0 || both[0].Files > both[1].Files {
		t.Fatalf("PyIceberg %q: server planning read %d rows from %d files, client planning %d rows from %d files",
			like, len(both[0].IDs), both[0].Files, len(both[1].IDs), both[1].Files)
	}
}

// runClient runs a client program printing one JSON clientScan a line.
func runClient(t *testing.T, who, prog string, args ...string) []clientScan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v\n%s", who, err, tailBytes(stderr, 4000))
	}
	var scans []clientScan
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s clientScan
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%s printed %q: %v", who, line, err)
		}
		scans = append(scans, s)
	}
	return scans
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// icebergJava returns the java binary and the classpath of the test client
// (test/clients/java, built by .ci/run into .tools/java), or skips.
func icebergJava(t *testing.T) (string, string) {
	t.Helper()
	dir := os.Getenv("LAKEWEED_JAVA_SCAN_DIR")
	if dir == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".tools", "java")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skipf("Iceberg Java client: no java on PATH (install a JDK 17+ and Maven, then run .ci/run or mvn -f test/clients/java/pom.xml package)")
	}
	jar := filepath.Join(dir, "iceberg-java-scan.jar")
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("Iceberg Java client is not built (%s missing): run .ci/run, or mvn -q -f test/clients/java/pom.xml package (needs Maven)", jar)
	}
	return java, filepath.Join(dir, "lib", "*") + string(os.PathListSeparator) + jar
}

func TestIcebergJavaPlansOnTheServerWithTheRowsOfIcebergGo(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	java, cp := icebergJava(t)
	c := sharedCluster(t)
	const name = "restplan_java.events"
	tbl := clientTable(t, c, name)
	run := func(mode string, filters []string) []clientScan {
		t.Helper()
		args := []string{"-cp", cp, "lakeweed.ScanTable", "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(),
			"--table", name, "--mode", mode, "--select", "id,status"}
		for _, f := range filters {
			args = append(args, "--filter", f)
		}
		return runClient(t, "Iceberg Java "+mode, java, args...)
	}
	// filters travel as Iceberg expression JSON, bound as iceberg-go binds them
	jsonOf := func(e iceberg.BooleanExpression) string {
		bound, err := iceberg.BindExpr(tbl.Schema(), e, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(bound)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	checkClient(t, "Iceberg Java", tbl, func(mode string, filters []string) []clientScan {
		var js []string
		for i := range filters {
			js = append(js, jsonOf(clientQueries[i].iceberg))
		}
		var out []clientScan
		for _, s := range run(mode, js) {
			want := map[string]string{"server": "RESTTableScan", "client": "DataTableScan"}[mode]
			if s.Scan != want {
				t.Fatalf("Iceberg Java in %s mode scanned with %s; want %s", mode, s.Scan, want)
			}
			out = append(out, s)
		}
		return out
	})
	// the table property alone makes Java plan on the server
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"lakeweed.scan-planning-mode": "server"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := run("table", []string{jsonOf(clientQueries[0].iceberg)})
	if len(got) != 1 || got[0].Scan != "RESTTableScan" || got[0].Files != 1 || !slices.Equal(got[0].IDs, []int64{12345}) {
		t.Fatalf("Iceberg Java with no client setting on a table with lakeweed.scan-planning-mode=server: %+v; want RESTTableScan, 1 file, id 12345", got)
	}
}
