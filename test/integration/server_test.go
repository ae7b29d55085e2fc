package integration

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// On `weed server -s3 -pushdown`, the way the design says users run it, no
// table bucket exists: `weed pushdown import` and `weed pushdown demo`
// create the warehouse through the S3 Tables API and say so, and plans
// and queries over the loaded demo return exact row counts, pushdown and
// plain alike, given only the catalog's address.
func TestOnWeedServerTheDemoCreatesTheTableBucketAndPlansAndQueriesReturnExactRows(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartServer(t, harness.ServerOptions{})
	cat := c.CatalogAddr()
	ctx := context.Background()

	// The first import finds no table bucket and creates it.
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	out, errOut, err := harness.Weed(t, "pushdown", "import", "-dir", gen.Dir, "-table", "srv.imported", "-catalog", cat)
	if err != nil {
		t.Fatalf("weed pushdown import on weed server: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, `created table bucket "warehouse"`) {
		t.Errorf("the import did not say it created the table bucket:\n%s", errOut)
	}
	if rows := harness.CurrentRows(t, ctx, loadTable(t, c, "srv.imported")); len(rows) != 8 {
		t.Errorf("the imported table has %d rows, want 8", len(rows))
	}

	// On a second, fresh server the demo does the same.
	c = harness.StartServer(t, harness.ServerOptions{})
	cat = c.CatalogAddr()
	out, errOut, err = harness.Weed(t, "pushdown", "demo", "-table", "srv.events", "-rows", "4000", "-files", "4", "-rowGroupRows", "500", "-catalog", cat)
	if err != nil {
		t.Fatalf("weed pushdown demo on weed server: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, `created table bucket "warehouse"`) {
		t.Errorf("the demo did not say it created the table bucket:\n%s%s", out, errOut)
	}
	if !strings.Contains(out, "loaded srv.events") || !strings.Contains(out, "4000 rows") {
		t.Fatalf("unexpected demo output:\n%s", out)
	}

	tbl := loadTable(t, c, "srv.events")
	count := func(filter iceberg.BooleanExpression) int {
		t.Helper()
		res, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields("id")).ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		return int(res.NumRows())
	}
	if n := count(iceberg.AlwaysTrue{}); n != 4000 {
		t.Fatalf("iceberg-go scans %d rows, want 4000", n)
	}
	want := count(iceberg.EqualTo(iceberg.Reference("tenant_id"), "tenant-007"))
	if want == 0 {
		t.Fatalf("no row of tenant-007 in the demo")
	}

	out, errOut, err = harness.Weed(t, "pushdown", "plan", "-catalog", cat, "-table", "srv.events", "-where", "tenant_id = 'tenant-007'")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	if !regexp.MustCompile(`files +[1-4] of 4 planned`).MatchString(out) {
		t.Errorf("the plan does not cover the 4 files:\n%s", out)
	}

	for _, q := range []struct {
		sql  string
		want int
	}{
		{"SELECT id FROM srv.events", 4000},
		{"SELECT id, tenant_id FROM srv.events WHERE tenant_id = 'tenant-007'", want},
		{"SELECT id FROM srv.events WHERE id = 1234", 1},
	} {
		for _, mode := range []string{"-no-fallback", "-no-pushdown"} {
			out, errOut, err := harness.Weed(t, "pushdown", "query", "-catalog", cat, "-sql", q.sql, "-format", "csv", "-force", mode)
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", q.sql, mode, err, errOut)
			}
			if got := strings.Count(strings.TrimSpace(out), "\n"); got != q.want {
				t.Errorf("%s %s: %d rows, want %d", q.sql, mode, got, q.want)
			}
		}
	}
}
