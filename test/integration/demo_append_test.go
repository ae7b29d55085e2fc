package integration

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// `weed pushdown demo -append -rows N` adds N rows in new files to the
// demo table in a new snapshot, ids continuing where the table ends; with
// a btree wanted on id, the commit alone gets the new files indexed.
func TestDemoAppendAddsRowsInANewSnapshotAndTheCommitGetsThemIndexed(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	ctx := context.Background()
	const name = "demo_app.events"
	weed := func(args ...string) string {
		t.Helper()
		args = append(args, "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		out, errOut, err := harness.Weed(t, append([]string{"pushdown"}, args...)...)
		if err != nil {
			t.Fatalf("weed pushdown %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out + errOut
	}
	weed("demo", "-table", name, "-rows", "4000", "-files", "2", "-rowGroupRows", "500", "-indexed", "none")
	weed("index", "create", "-table", name, "-column", "id", "-kind", "btree", "-wait")
	load := func() *table.Table {
		t.Helper()
		tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"demo_app", "events"})
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	before := load().CurrentSnapshot().SnapshotID

	out := weed("demo", "-table", name, "-append", "-rows", "1500", "-files", "1", "-rowGroupRows", "500")
	if !strings.Contains(out, "appending to "+name) || !strings.Contains(out, "part-00002.parquet") {
		t.Fatalf("demo -append said:\n%s", out)
	}
	tbl := load()
	if tbl.CurrentSnapshot().SnapshotID == before {
		t.Fatalf("demo -append made no new snapshot")
	}
	ids, err := tbl.Scan(table.WithSelectedFields("id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer ids.Release()
	var all []int64
	for _, ch := range ids.Column(0).Data().Chunks() {
		all = append(all, ch.(*array.Int64).Int64Values()...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) != 5500 || all[0] != 0 || all[len(all)-1] != 5499 {
		t.Fatalf("after -append the table has %d rows (ids %d…%d); want 5500 rows, ids 0…5499", len(all), all[0], all[len(all)-1])
	}
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("id %d appears twice after -append", all[i])
		}
	}
	if got := tbl.Properties()["lakeweed.demo.rows"]; got != "5500" {
		t.Fatalf("lakeweed.demo.rows = %q after -append", got)
	}

	// No BuildIndexes call: the commit schedules the new file's btree.
	deadline := time.Now().Add(60 * time.Second)
	for {
		list, err := c.Catalog(t).ListIndexes(ctx, &pushdown_pb.ListIndexesRequest{Table: name})
		if err != nil {
			t.Fatal(err)
		}
		committed := 0
		for _, en := range list.GetEntries() {
			if en.GetKind() == "btree" && en.GetState() == "committed" {
				committed++
			}
		}
		if list.GetFilesTotal() == 3 && committed == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after -append: %d files, %d committed btree entries; want 3 and 3", list.GetFilesTotal(), committed)
		}
		time.Sleep(300 * time.Millisecond)
	}
	// A new id is found through the index in the new file.
	resp := planIDs(t, c, name, 4321)
	if len(resp.GetRowGroups()) != 1 || !strings.Contains(strings.Join(resp.GetStats().GetIndexesUsed(), ";"), "btree(id)") {
		t.Fatalf("id 4321 plans %d row groups, indexes used %q; want 1 through btree(id)", len(resp.GetRowGroups()), resp.GetStats().GetIndexesUsed())
	}
}
