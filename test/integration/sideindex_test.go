package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// createUnindexedTable writes ns.name with iceberg-go's own writer (no page
// index, no bloom filters) in one file of several row groups, ids shuffled
// so no zone map can find one.
func createUnindexedTable(t *testing.T, c *harness.Cluster, ns, name string, rows int64, extra ...string) (*table.Table, []int64) {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{ns}, nil)
	props := iceberg.Properties{
		"write.parquet.row-group-limit":  "500",
		"write.metadata.metrics.default": "none",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, deleteSchema(), catalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	r := rand.New(rand.NewPCG(7, 11))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	at := deleteRowsOf(t, ids)
	defer at.Release()
	out, err := tbl.AppendTable(ctx, at, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out, ids
}

func planIDs(t *testing.T, c *harness.Cluster, tableName string, ids ...int64) *pushdown_pb.ParquetPushdownResponse {
	t.Helper()
	var lits []string
	for _, id := range ids {
		lits = append(lits, fmt.Sprint(id))
	}
	pred := fmt.Sprintf(`{"type":"in","term":{"field-id":1},"values":[%s]}`, strings.Join(lits, ","))
	if len(ids) == 1 {
		pred = fmt.Sprintf(`{"type":"eq","term":{"field-id":1},"value":%d}`, ids[0])
	}
	resp, err := c.Catalog(t).Plan(context.Background(), &pushdown_pb.ParquetPushdownRequest{Table: tableName,
		PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: []byte(pred)})
	if err != nil {
		t.Fatalf("plan %s: %v", pred, err)
	}
	return resp
}

func plannedRows(resp *pushdown_pb.ParquetPushdownResponse) int64 {
	var n int64
	for _, rg := range resp.GetRowGroups() {
		if len(rg.GetRowRanges()) == 0 {
			n += rg.GetRowCount()
			continue
		}
		for _, r := range rg.GetRowRanges() {
			n += r.GetEnd() - r.GetStart()
		}
	}
	return n
}

// A btree and a bloom built beside the data through `weed pushdown index
// create` narrow a point lookup on an unclustered column that Parquet's own
// metadata cannot prune, the registry says what was built, and a payload
// that disappears only costs the pruning, never a row.
func TestSideIndexesBuiltBesideTheDataNarrowPlansAndTheirLossCostsOnlySpeed(t *testing.T) {
	c := sharedCluster(t)
	tbl, ids := createUnindexedTable(t, c, "side_it", "events", 3000)
	rowGroupOf := map[int64]int{}
	for pos, id := range ids {
		rowGroupOf[id] = pos / 500
	}
	const name = "side_it.events"
	before := planIDs(t, c, name, 1234)
	if len(before.GetRowGroups()) != 6 {
		t.Fatalf("without side indexes an id lookup plans %d row groups; want all 6", len(before.GetRowGroups()))
	}
	out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "id", "-kind", "btree", "-wait")
	if err != nil {
		t.Fatalf("index create btree: %v\n%s%s", err, out, errOut)
	}
	// The build ran either here or, first, in the background build the
	// property's commit scheduled (create -wait then waits for it): either
	// way the file is indexed.
	if !strings.Contains(errOut, "btree index on id: 1 of 1 files indexed") {
		t.Fatalf("index create said %q", errOut)
	}
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "id", "-kind", "bloom", "-wait"); err != nil {
		t.Fatalf("index create bloom: %v\n%s%s", err, out, errOut)
	}

	// The registry lists both, committed, with their payload paths.
	out, errOut, err = harness.Weed(t, "pushdown", "index", "list", "-catalog", c.CatalogAddr(), "-table", name, "-json")
	if err != nil {
		t.Fatalf("index list: %v\n%s", err, errOut)
	}
	var list struct {
		Wanted []struct {
			FieldID int    `json:"field_id"`
			Kind    string `json:"kind"`
		} `json:"wanted"`
		Entries []struct {
			Kind        string `json:"kind"`
			State       string `json:"state"`
			PayloadPath string `json:"payload_path"`
			Identity    string `json:"identity"`
		} `json:"entries"`
		FilesTotal string `json:"files_total"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("index list -json: %v\n%s", err, out)
	}
	var kinds []string
	for _, e := range list.Entries {
		if e.State != "committed" || !strings.Contains(e.PayloadPath, "/.index/") || !strings.HasSuffix(e.PayloadPath, "/"+e.Identity+"/"+e.Kind+".fid_1") {
			t.Fatalf("registry entry %+v", e)
		}
		kinds = append(kinds, e.Kind)
	}
	sort.Strings(kinds)
	if len(list.Wanted) != 2 || fmt.Sprint(kinds) != "[bloom btree]" || list.FilesTotal != "1" {
		t.Fatalf("index list: wanted %+v, entry kinds %v, files %s", list.Wanted, kinds, list.FilesTotal)
	}

	// A point lookup now plans one row group, a handful of rows.
	after := planIDs(t, c, name, 1234)
	used := strings.Join(after.GetStats().GetIndexesUsed(), ";")
	if len(after.GetRowGroups()) != 1 || plannedRows(after) > 64 || !strings.Contains(used, "btree(id)") {
		t.Fatalf("with a btree an id lookup plans %d row groups, %d rows, indexes used %q; want 1 row group of at most 64 rows", len(after.GetRowGroups()), plannedRows(after), used)
	}
	if got := planIDs(t, c, name, 99_999); len(got.GetRowGroups()) != 0 {
		t.Fatalf("an id no file holds plans %d row groups", len(got.GetRowGroups()))
	}
	in := planIDs(t, c, name, 3, 1500, 2999)
	want := map[int]bool{rowGroupOf[3]: true, rowGroupOf[1500]: true, rowGroupOf[2999]: true}
	got := map[int]bool{}
	for _, rg := range in.GetRowGroups() {
		got[int(rg.GetRowGroup())] = true
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || plannedRows(in) > 3*64 {
		t.Fatalf("IN of 3 ids plans row groups %v (%d rows); want exactly %v", got, plannedRows(in), want)
	}

	// Every matching row is still read by the connector.
	rows := connectorRows(t, c, name, "id = 1234 OR id = 7")
	if len(rows) != 2 {
		t.Fatalf("the connector read %d rows for two ids: %v", len(rows), rows)
	}

	// The payloads vanish: plans fall back to the tiers below and say so.
	for _, e := range list.Entries {
		key := strings.TrimPrefix(e.PayloadPath, "s3://")
		req, _ := http.NewRequest(http.MethodDelete, "http://"+c.FilerAddr()+"/buckets/"+key, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		lost := planIDs(t, c, name, 1234)
		missing := strings.Join(lost.GetStats().GetIndexesMissing(), ";")
		if len(lost.GetRowGroups()) == 6 && strings.Contains(missing, "btree(id): missing") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the payloads were deleted: %d row groups, indexes missing %q; want all 6 and btree(id) missing", len(lost.GetRowGroups()), missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if rows := connectorRows(t, c, name, "id = 1234 OR id = 7"); len(rows) != 2 {
		t.Fatalf("without the payloads the connector read %d rows for two ids", len(rows))
	}
	_ = tbl
}

// connectorRows runs a pushdown query (no fallback) and returns its JSON
// rows.
func connectorRows(t *testing.T, c *harness.Cluster, tableName, where string) []string {
	t.Helper()
	out, errOut, err := harness.Weed(t, "pushdown", "query", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-sql", "SELECT id, name FROM "+tableName+" WHERE "+where, "-format", "json", "-no-fallback", "-force")
	if err != nil {
		t.Fatalf("query %s: %v\n%s", where, err, errOut)
	}
	return jsonLines(out)
}
