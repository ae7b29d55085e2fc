package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// Client commands need only -catalog: the catalog's Status advertises the
// Iceberg REST catalog and S3 gateway of its process, demo, plan and query
// (pushdown and plain) find them there, and an explicit -iceberg still
// overrides what Status says.
func TestClientCommandsGivenOnlyTheCatalogAddressFindTheIcebergAndS3URLsThroughItsStatus(t *testing.T) {
	c := sharedCluster(t)
	cat := c.CatalogAddr()

	out, errOut, err := harness.Weed(t, "pushdown", "status", "-catalog", cat, "-json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, errOut)
	}
	var st struct {
		IcebergURL string `json:"iceberg_url"`
		S3URL      string `json:"s3_url"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out)
	}
	if st.IcebergURL != c.IcebergURI() || st.S3URL != c.S3Endpoint() {
		t.Fatalf("status advertises iceberg %q and s3 %q, want %q and %q", st.IcebergURL, st.S3URL, c.IcebergURI(), c.S3Endpoint())
	}

	out, errOut, err = harness.Weed(t, "pushdown", "demo", "-table", "oneaddr.events", "-rows", "6000", "-files", "3", "-catalog", cat)
	if err != nil {
		t.Fatalf("demo with only -catalog: %v\n%s%s", err, out, errOut)
	}
	if strings.Contains(errOut, "note:") {
		t.Errorf("the demo fell back to defaults:\n%s", errOut)
	}

	ctx := context.Background()
	tbl := loadTable(t, c, "oneaddr.events")
	ref, err := tbl.Scan(table.WithRowFilter(iceberg.LessThan(iceberg.Reference("id"), int64(500))), table.WithSelectedFields("id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := int(ref.NumRows())
	ref.Release()
	if want == 0 || want == 6000 {
		t.Fatalf("the reference selects %d of 6000 rows; pick another predicate", want)
	}

	sql := "SELECT id FROM oneaddr.events WHERE id < 500"
	for _, mode := range []string{"-no-fallback", "-no-pushdown"} {
		out, errOut, err := harness.Weed(t, "pushdown", "query", "-catalog", cat, "-sql", sql, "-format", "csv", mode)
		if err != nil {
			t.Fatalf("query %v: %v\n%s", mode, err, errOut)
		}
		if got := strings.Count(strings.TrimSpace(out), "\n"); got != want {
			t.Errorf("query %v with only -catalog returned %d rows, iceberg-go %d", mode, got, want)
		}
	}

	out, errOut, err = harness.Weed(t, "pushdown", "plan", "-catalog", cat, "-table", "oneaddr.events", "-where", "id < 500")
	if err != nil || !strings.Contains(out, "files      ") {
		t.Fatalf("plan with only -catalog: %v\n%s%s", err, out, errOut)
	}

	// An explicit -iceberg wins over Status, so a wrong one fails naming it.
	wrong := "http://127.0.0.1:1"
	_, errOut, err = harness.Weed(t, "pushdown", "query", "-catalog", cat, "-iceberg", wrong, "-sql", sql, "-format", "csv")
	if err == nil || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("a wrong explicit -iceberg did not fail naming it: %v\n%s", err, errOut)
	}
}
