package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

func TestDemoLoaderWritesATableIcebergGoCanScan(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", "demo_it.events", "-rows", "20000", "-files", "4",
		"-rowGroupRows", "2500", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
	if err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "loaded demo_it.events") || strings.Count(out, "page index + bloom filters") != 2 {
		t.Fatalf("unexpected demo output:\n%s", out)
	}
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"demo_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	all, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer all.Release()
	if all.NumRows() != 20000 {
		t.Fatalf("table has %d rows, want 20000", all.NumRows())
	}
	one, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("id"), int64(12345))), table.WithSelectedFields("id", "tenant_id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("point scan: %v", err)
	}
	defer one.Release()
	if one.NumRows() != 1 {
		t.Fatalf("id = 12345 returned %d rows", one.NumRows())
	}

	// A second load of the same name is refused unless -replace.
	_, errOut, err = harness.Weed(t, "pushdown", "demo", "-table", "demo_it.events", "-rows", "100", "-files", "1",
		"-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
	if err == nil || !strings.Contains(errOut, "already exists") {
		t.Fatalf("reloading an existing table: %v %s", err, errOut)
	}
}
