package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/restplan"
)

// scanned is what one iceberg-go scan returned: the ids of its rows, sorted,
// and the data files its plan named.
type scanned struct {
	ids   []int64
	files int
}

// scanWith plans and reads tbl through iceberg-go with planning mode mode
// (local: iceberg-go reads the manifests itself; remote: the REST catalog's
// server-side planning, i.e. lakeweed's planner).
func scanWith(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression, mode table.ScanPlanningMode, fields ...string) scanned {
	t.Helper()
	// a deadline: iceberg-go then polls a submitted plan until it, not for
	// a fixed number of retries (a loaded machine plans slowly)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithScanPlanningMode(mode)}
	if len(fields) > 0 {
		opts = append(opts, table.WithSelectedFields(fields...))
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatalf("%s plan of %s: %v", mode, filter, err)
	}
	files := map[string]bool{}
	for _, task := range tasks {
		files[task.File.FilePath()] = true
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("%s scan of %s: %v", mode, filter, err)
	}
	defer at.Release()
	var ids []int64
	idx := at.Schema().FieldIndices("id")
	if len(idx) != 1 {
		t.Fatalf("scan of %s has no id column: %s", filter, at.Schema())
	}
	for _, chunk := range at.Column(idx[0]).Data().Chunks() {
		ids = append(ids, chunk.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	return scanned{ids: ids, files: len(files)}
}

// sameRowsRemoteAndLocal checks a remote plan's scan returns exactly the
// rows of a local plan's, planning no more files, and returns both.
func sameRowsRemoteAndLocal(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression, fields ...string) (local, remote scanned) {
	t.Helper()
	local = scanWith(t, tbl, filter, table.ScanPlanningLocal, fields...)
	remote = scanWith(t, tbl, filter, table.ScanPlanningRemote, fields...)
	if !slices.Equal(local.ids, remote.ids) {
		t.Fatalf("%s: remote planning read %d rows, local planning %d (first ids %v vs %v)", filter, len(remote.ids), len(local.ids), head(remote.ids), head(local.ids))
	}
	if remote.files > local.files {
		t.Fatalf("%s: remote planning named %d files, local planning %d", filter, remote.files, local.files)
	}
	return local, remote
}

func head(ids []int64) []int64 { return ids[:min(5, len(ids))] }

// demoPredicate draws a random predicate over the demo table's columns.
func demoPredicate(r *rand.Rand, rows int64, depth int) iceberg.BooleanExpression {
	if depth > 0 && r.IntN(3) == 0 {
		a, b := demoPredicate(r, rows, depth-1), demoPredicate(r, rows, depth-1)
		switch r.IntN(3) {
		case 0:
			return iceberg.NewAnd(a, b)
		case 1:
			return iceberg.NewOr(a, b)
		default:
			return iceberg.NewNot(a)
		}
	}
	id, tenant, status := iceberg.Reference("id"), iceberg.Reference("tenant_id"), iceberg.Reference("status")
	tn := func() string { return fmt.Sprintf("tenant-%03d", r.IntN(100)) }
	switch r.IntN(11) {
	case 0:
		return iceberg.EqualTo(id, r.Int64N(rows))
	case 1:
		return iceberg.LessThan(id, r.Int64N(rows))
	case 2:
		return iceberg.GreaterThanEqual(id, r.Int64N(rows))
	case 3:
		return iceberg.IsIn(id, r.Int64N(rows), r.Int64N(rows), r.Int64N(rows))
	case 4:
		return iceberg.EqualTo(tenant, tn())
	case 5:
		return iceberg.IsIn(tenant, tn(), tn())
	case 6:
		return iceberg.NotIn(tenant, tn(), tn(), tn())
	case 7:
		return iceberg.EqualTo(status, []string{"ok", "warn", "error", "retry", "timeout"}[r.IntN(5)])
	case 8:
		return iceberg.NotEqualTo(status, "ok")
	case 9:
		return iceberg.IsNull(iceberg.Reference("message"))
	default:
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(rows)) * 250 * time.Millisecond)
		return iceberg.LessThan(iceberg.Reference("ts"), iceberg.Timestamp(ts.UnixMicro()))
	}
}

// iceberg-go's scans planned on the server (table.WithScanPlanningMode
// remote, lakeweed's planner behind the REST catalog's plan endpoint)
// return exactly the rows of its local planning for random predicates over
// the demo table, before and after side indexes are built (a btree point
// lookup then plans 1 of the 8 files local planning reads), and over tables
// with v2 position deletes, v3 deletion vectors and equality deletes.
func TestRemoteScanPlanningReturnsTheRowsOfLocalPlanning(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	const name, rows = "restplan.events", int64(16000)
	c := sharedCluster(t)
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", fmt.Sprint(rows), "-files", "8", "-rowGroupRows", "1000", "-indexed", "none")
	tbl, err := c.Iceberg(t).LoadTable(context.Background(), table.Identifier{"restplan", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Iceberg(t).SupportsFullRemoteScanPlanning() {
		t.Fatal("GET /v1/config does not advertise the scan-planning endpoints")
	}
	fields := []string{"id", "tenant_id", "status", "message"}
	r := rand.New(rand.NewPCG(29, 1))
	var preds []iceberg.BooleanExpression
	for i := 0; i < 18; i++ {
		preds = append(preds, demoPredicate(r, rows, 2))
	}
	point := iceberg.EqualTo(iceberg.Reference("id"), int64(12345))
	preds = append(preds, point)
	for _, p := range preds {
		sameRowsRemoteAndLocal(t, tbl, p, fields...)
	}
	local, remote := sameRowsRemoteAndLocal(t, tbl, point, fields...)
	if remote.files != local.files {
		t.Fatalf("without side indexes the point lookup planned %d files remotely, %d locally; want the same", remote.files, local.files)
	}
	for _, ix := range [][2]string{{"id", "btree"}, {"tenant_id", "bitmap"}, {"status", "bitmap"}, {"message", "ngram"}} {
		weed("index", "create", "-table", name, "-column", ix[0], "-kind", ix[1], "-wait")
	}
	for _, p := range preds {
		sameRowsRemoteAndLocal(t, tbl, p, fields...)
	}
	local, remote = sameRowsRemoteAndLocal(t, tbl, point, fields...)
	if local.files != 8 || remote.files != 1 || len(remote.ids) != 1 {
		t.Fatalf("btree point lookup: remote planning named %d files (%d rows), local %d; want 1 of 8", remote.files, len(remote.ids), local.files)
	}

	// deletes: the files' delete files travel with their tasks
	v2 := positionDeleteTable(t, c, "restplan_del", "pos_v2", 2, 0)
	v3 := positionDeleteTable(t, c, "restplan_del", "dv_v3", 3, 0)
	eq := equalityDeleteTable(t, c, "restplan_del", "eq")
	for _, tb := range []*table.Table{v2, v3, eq} {
		r := rand.New(rand.NewPCG(29, 2))
		for i := 0; i < 12; i++ {
			sameRowsRemoteAndLocal(t, tb, deletePredicate(r, 7000, 2))
		}
		sameRowsRemoteAndLocal(t, tb, iceberg.AlwaysTrue{})
	}
}

// deletePredicate draws a random predicate over the delete tables' columns
// (id, the identity partition part, val with NULLs, name).
func deletePredicate(r *rand.Rand, rows int64, depth int) iceberg.BooleanExpression {
	if depth > 0 && r.IntN(3) == 0 {
		a, b := deletePredicate(r, rows, depth-1), deletePredicate(r, rows, depth-1)
		switch r.IntN(3) {
		case 0:
			return iceberg.NewAnd(a, b)
		case 1:
			return iceberg.NewOr(a, b)
		default:
			return iceberg.NewNot(a)
		}
	}
	switch r.IntN(6) {
	case 0:
		return iceberg.EqualTo(iceberg.Reference("part"), deleteParts[r.IntN(3)])
	case 1:
		return iceberg.NotEqualTo(iceberg.Reference("part"), deleteParts[r.IntN(3)])
	case 2:
		return iceberg.LessThan(iceberg.Reference("id"), r.Int64N(rows))
	case 3:
		return iceberg.IsNull(iceberg.Reference("val"))
	case 4:
		return iceberg.GreaterThan(iceberg.Reference("val"), r.Int64N(rows*10))
	default:
		return iceberg.EqualTo(iceberg.Reference("name"), fmt.Sprintf("n%d", r.Int64N(rows)))
	}
}

// restCall sends one request to the Iceberg REST catalog and decodes the
// JSON answer.
func restCall(t *testing.T, method, u, token string, body any) (int, map[string]any, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	return sendREST(t, req)
}

// sendREST sends req and returns the status, the JSON answer and its bytes.
func sendREST(t *testing.T, req *http.Request) (int, map[string]any, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, raw
}

// The table property lakeweed.scan-planning-mode puts scan-planning-mode
// into LoadTable's config (what Iceberg Java, PyIceberg and DuckDB follow);
// filters bind names case-insensitively when asked; an incremental append
// scan (start/end snapshot) plans the files the snapshots in between added;
// malformed requests are refused naming the problem, quoting little of it.
func TestScanPlanningEndpointsFollowTheRESTSpec(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	cat := c.Iceberg(t)
	tbl := appendRows(t, createDeleteTable(t, c, "restplan_spec", "t", 2), 0, 1200)
	first := tbl.CurrentSnapshot().SnapshotID
	tbl = appendRows(t, tbl, 1200, 2000)
	tbl = appendRows(t, tbl, 2000, 2600)
	base := c.IcebergURI() + "/v1/" + c.Warehouse + "/namespaces/restplan_spec/tables/t"

	// LoadTable config follows the property
	code, res, _ := restCall(t, http.MethodGet, base, "", nil)
	if code != 200 {
		t.Fatalf("LoadTable: %d", code)
	}
	if cfg, _ := res["config"].(map[string]any); cfg["scan-planning-mode"] != nil {
		t.Fatalf("LoadTable config without the property: %v", cfg)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{restplan.TableProperty: "server"}); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	code, res, _ = restCall(t, http.MethodGet, base, "", nil)
	if cfg, _ := res["config"].(map[string]any); code != 200 || cfg["scan-planning-mode"] != "server" {
		t.Fatalf("LoadTable with %s=server: %d, config %v", restplan.TableProperty, code, res["config"])
	}

	// case sensitivity
	plan := func(body map[string]any) (int, map[string]any, []byte) {
		t.Helper()
		return restCall(t, http.MethodPost, base+"/plan", "", body)
	}
	filter := map[string]any{"type": "lt", "term": "ID", "value": 100}
	if code, res, _ := plan(map[string]any{"filter": filter}); code != 400 || !strings.Contains(fmt.Sprint(res), "no field \\\"ID\\\"") && !strings.Contains(fmt.Sprint(res), `no field "ID"`) {
		t.Fatalf("case-sensitive filter on ID: %d %v; want 400 naming the field", code, res)
	}
	code, res, _ = plan(map[string]any{"filter": filter, "case-sensitive": false, "select": []string{"Id", "PART"}})
	if code != 200 || res["status"] != "completed" {
		t.Fatalf("case-insensitive filter on ID: %d %v", code, res)
	}
	tasks, _ := res["file-scan-tasks"].([]any)
	if len(tasks) == 0 {
		t.Fatalf("id < 100 planned no task: %v", res)
	}
	// identity partition part: a file's residual drops the leaves on it
	code, res, _ = plan(map[string]any{"filter": map[string]any{"type": "and",
		"left":  map[string]any{"type": "eq", "term": "part", "value": "a"},
		"right": map[string]any{"type": "lt", "term": "id", "value": 100}}})
	tasks, _ = res["file-scan-tasks"].([]any)
	if code != 200 || len(tasks) == 0 {
		t.Fatalf("part = a AND id < 100: %d %v", code, res)
	}
	for _, tk := range tasks {
		got, _ := json.Marshal(tk.(map[string]any)["residual-filter"])
		if string(got) != `{"term":"id","type":"lt","value":100}` {
			t.Fatalf("residual of a file of partition a: %s; want id < 100", got)
		}
	}

	// stats-fields: column stats of those fields only, bounds as Iceberg's binary form in hex
	code, res, _ = plan(map[string]any{"stats-fields": []string{"id"}})
	tasks, _ = res["file-scan-tasks"].([]any)
	if code != 200 || len(tasks) == 0 {
		t.Fatalf("stats-fields plan: %d %v", code, res)
	}
	df := tasks[0].(map[string]any)["data-file"].(map[string]any)
	lb, _ := df["lower-bounds"].(map[string]any)
	if keys, _ := lb["keys"].([]any); len(keys) != 1 || keys[0] != float64(1) || len(lb["values"].([]any)[0].(string)) != 16 {
		t.Fatalf("stats-fields [id]: lower-bounds %v; want field 1 as 8 bytes of hex", df["lower-bounds"])
	}
	code, res, _ = plan(map[string]any{})
	if df := res["file-scan-tasks"].([]any)[0].(map[string]any)["data-file"].(map[string]any); df["lower-bounds"] != nil || df["value-counts"] != nil {
		t.Fatalf("without stats-fields the data file carries stats: %v", df)
	}
	// snapshot-id: time travel plans that snapshot's files
	code, res, _ = plan(map[string]any{"snapshot-id": first, "use-snapshot-schema": true})
	old, err := tbl.Scan(table.WithSnapshotID(first)).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tasks, _ := res["file-scan-tasks"].([]any); code != 200 || len(tasks) != len(old) {
		t.Fatalf("plan of snapshot %d: %d, %d tasks; iceberg-go plans %d", first, code, len(tasks), len(old))
	}

	// incremental append scan: the files of the two later appends
	want, err := tbl.NewIncrementalAppendScan().FromSnapshotExclusive(first).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	code, res, _ = plan(map[string]any{"start-snapshot-id": first, "end-snapshot-id": tbl.CurrentSnapshot().SnapshotID})
	tasks, _ = res["file-scan-tasks"].([]any)
	if code != 200 || len(tasks) != len(want) || len(want) == 0 {
		t.Fatalf("incremental plan: %d, %d tasks; iceberg-go plans %d", code, len(tasks), len(want))
	}
	for _, w := range want {
		found := false
		for _, tk := range tasks {
			found = found || tk.(map[string]any)["data-file"].(map[string]any)["file-path"] == w.File.FilePath()
		}
		if !found {
			t.Fatalf("incremental plan misses %s", w.File.FilePath())
		}
	}

	// malformed requests
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"filter": map[string]any{"type": "eq", "term": long, "value": 1}}, "no field"},
		{map[string]any{"snapshot-id": 1, "start-snapshot-id": 1, "end-snapshot-id": 2}, "cannot be combined"},
		{map[string]any{"snapshot-id": 12345}, "12345"},
		{map[string]any{"select": []string{"nosuch"}}, "no field"},
		{map[string]any{"filter": map[string]any{"type": "wat", "term": "id"}}, "unknown expression type"},
	} {
		code, res, raw := plan(tc.body.(map[string]any))
		if code != 400 || !strings.Contains(string(raw), tc.want) || len(raw) > 600 || res["error"] == nil {
			t.Fatalf("plan %v: %d %s; want 400 mentioning %q in a short message", tc.body, code, raw, tc.want)
		}
	}
	big := map[string]any{"select": []string{strings.Repeat("y", 2<<20)}}
	if code, _, raw := plan(big); code != 400 || len(raw) > 600 {
		t.Fatalf("a 2 MiB request: %d %s", code, raw)
	}
	// unknown plan ids and plan tasks
	code, res, _ = restCall(t, http.MethodGet, base+"/plan/"+url.PathEscape("nosuchplan"), "", nil)
	if e, _ := res["error"].(map[string]any); code != 404 || e["type"] != "NoSuchPlanIdException" {
		t.Fatalf("fetch of an unknown plan: %d %v", code, res)
	}
	code, res, _ = restCall(t, http.MethodPost, base+"/tasks", "", map[string]any{"plan-task": "nosuch.1"})
	if e, _ := res["error"].(map[string]any); code != 404 || e["type"] != "NoSuchPlanTaskException" {
		t.Fatalf("fetch of an unknown plan task: %d %v", code, res)
	}
	// upstream's routes keep working through the front
	listed := 0
	for _, err := range cat.ListTables(ctx, table.Identifier{"restplan_spec"}) {
		if err != nil {
			t.Fatalf("list tables through the front: %v", err)
		}
		listed++
	}
	if listed != 1 {
		t.Fatalf("list tables through the front: %d tables; want 1", listed)
	}
}

// A table of 2,000 small files on a catalog answering every plan
// "submitted" with 300 tasks a page goes through the asynchronous path
// (polling, plan tasks fetched page by page) and still returns the rows of
// local planning; a plan unused for longer than -pushdown.rest.planTTL is
// gone with the spec's errors (NoSuchPlanIdException, NoSuchPlanTaskException).
func TestLargeTablesArePlannedAsynchronouslyAndPlansExpire(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{
		"-pushdown.rest.syncWait=0", "-pushdown.rest.tasksPerPage=300", "-pushdown.rest.planTTL=8s"}})
	weed := pushdownCLI(t, c)
	weed("demo", "-table", "big.events", "-rows", "6000", "-files", "2000", "-rowGroupRows", "3", "-indexed", "none")
	ctx := context.Background()
	cat := c.Iceberg(t)
	ident := table.Identifier{"big", "events"}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	planned := func(mode table.ScanPlanningMode, filter iceberg.BooleanExpression) map[string]bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // polled until it (see scanWith)
		defer cancel()
		scan := tbl.Scan(table.WithRowFilter(filter), table.WithScanPlanningMode(mode), table.WithSelectedFields("id"))
		defer scan.Close()
		tasks, err := scan.PlanFiles(ctx)
		if err != nil {
			t.Fatalf("%s plan: %v", mode, err)
		}
		files := map[string]bool{}
		for _, task := range tasks {
			files[task.File.FilePath()] = true
		}
		return files
	}
	local, remote := planned(table.ScanPlanningLocal, iceberg.AlwaysTrue{}), planned(table.ScanPlanningRemote, iceberg.AlwaysTrue{})
	if len(local) != 2000 || len(remote) != 2000 {
		t.Fatalf("a full scan: local planning named %d files, remote %d; want 2000", len(local), len(remote))
	}
	for f := range local {
		if !remote[f] {
			t.Fatalf("remote planning left out %s", f)
		}
	}
	// ids are 0..5999, each once: id < 60 is exactly 60 rows
	got := scanWith(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(60)), table.ScanPlanningRemote, "id", "status")
	if len(got.ids) != 60 || got.ids[0] != 0 || got.ids[59] != 59 {
		t.Fatalf("remote scan of id < 60: %d rows %v", len(got.ids), head(got.ids))
	}

	// the low-level protocol: submitted, then completed with plan tasks
	resp, err := cat.PlanTableScan(ctx, ident, rest.PlanTableScanRequest{Select: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != rest.PlanStatusSubmitted || resp.PlanID == nil {
		t.Fatalf("plan of 2,000 files: status %s; want submitted with a plan id", resp.Status)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	done, err := cat.WaitForPlan(wctx, ident, *resp.PlanID, rest.WaitForPlanOptions{MinDelay: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(done.PlanTasks) != 6 || len(done.FileScanTasks) != 300 {
		t.Fatalf("completed plan: %d inline tasks, %d plan tasks; want 300 and 6", len(done.FileScanTasks), len(done.PlanTasks))
	}
	n := len(done.FileScanTasks)
	for _, pt := range done.PlanTasks[:5] {
		page, err := cat.FetchScanTasks(ctx, ident, rest.FetchScanTasksRequest{PlanTask: pt})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.FileScanTasks)
	}
	if n != 1800 {
		t.Fatalf("pages held %d tasks; want 1800 before the last", n)
	}
	// expiry: 8 s unused
	time.Sleep(9 * time.Second)
	if _, err := cat.FetchScanTasks(ctx, ident, rest.FetchScanTasksRequest{PlanTask: done.PlanTasks[5]}); !errors.Is(err, rest.ErrNoSuchPlanTask) {
		t.Fatalf("plan task of an expired plan: %v; want NoSuchPlanTaskException", err)
	}
	if _, err := cat.FetchPlanningResult(ctx, ident, *resp.PlanID, rest.FetchPlanningResultOptions{}); !errors.Is(err, rest.ErrPlanExpired) {
		t.Fatalf("fetch of an expired plan: %v; want NoSuchPlanIdException", err)
	}
	// cancel frees a plan at once
	resp, err = cat.PlanTableScan(ctx, ident, rest.PlanTableScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CancelPlanning(ctx, ident, *resp.PlanID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if _, err := cat.FetchPlanningResult(ctx, ident, *resp.PlanID, rest.FetchPlanningResultOptions{}); !errors.Is(err, rest.ErrPlanExpired) {
		t.Fatalf("fetch of a cancelled plan: %v; want NoSuchPlanIdException", err)
	}
}

// restplanIdentities: admin and bob may do anything, alice may read only
// objects under warehouse/acl_it/open.
const restplanIdentities = `{
  "identities": [
    {"name": "admin", "credentials": [{"accessKey": "AKADMIN000000000", "secretKey": "admin-secret"}],
     "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB00000000000", "secretKey": "bob-secret"}],
     "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
    {"name": "alice", "credentials": [{"accessKey": "AKALICE000000000", "secretKey": "alice-secret"}],
     "actions": ["Read:warehouse/acl_it/open*", "List:warehouse"]}
  ]
}`

// oauthToken gets a bearer token from the catalog's OAuth2 endpoint.
func oauthToken(t *testing.T, c *harness.Cluster, key, secret string) string {
	t.Helper()
	resp, err := http.PostForm(c.IcebergURI()+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {key}, "client_secret": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("oauth token for %s: %d %v", key, resp.StatusCode, err)
	}
	return tok.AccessToken
}

// On a cluster with identities, the planning endpoints answer exactly as
// LoadTable does to a caller who may not read a table, whether or not it
// exists; plan ids and plan tasks are bound to the caller who made them.
func TestUnauthorizedScanPlanningLearnsNothing(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(restplanIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json"},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	})
	appendRows(t, appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 300), 300, 600)
	appendRows(t, appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 300), 300, 600)
	admin := oauthToken(t, c, "AKADMIN000000000", "admin-secret")
	alice := oauthToken(t, c, "AKALICE000000000", "alice-secret")
	tbl := func(ns, name string) string {
		return c.IcebergURI() + "/v1/" + c.Warehouse + "/namespaces/" + ns + "/tables/" + name
	}
	norm := func(b []byte) string {
		return strings.NewReplacer("nosuchtable", "T", "closed", "T", "nosuchns", "N", "acl_it", "N").Replace(string(b))
	}
	for _, who := range []struct{ name, token string }{{"anonymous", ""}, {"alice", alice}, {"a forged token", admin[:len(admin)-4] + "AAAA"}} {
		var first string
		for _, target := range []string{tbl("acl_it", "closed"), tbl("acl_it", "nosuchtable"), tbl("nosuchns", "closed")} {
			lcode, _, lraw := restCall(t, http.MethodGet, target, who.token, nil)
			if lcode == 200 {
				t.Fatalf("%s may load %s", who.name, target)
			}
			for _, call := range []struct{ method, path string }{{http.MethodPost, "/plan"}, {http.MethodGet, "/plan/x"}, {http.MethodDelete, "/plan/x"}, {http.MethodPost, "/tasks"}} {
				var body any = map[string]any{}
				if call.path == "/tasks" {
					body = map[string]any{"plan-task": "x.1"}
				}
				code, _, raw := restCall(t, call.method, target+call.path, who.token, body)
				if code != lcode || norm(raw) != norm(lraw) {
					t.Fatalf("%s %s %s: %d %s; LoadTable answers %d %s", who.name, call.method, target+call.path, code, raw, lcode, lraw)
				}
				if first == "" {
					first = fmt.Sprint(code) + norm(raw)
				} else if fmt.Sprint(code)+norm(raw) != first {
					t.Fatalf("%s learns from %s %s: %d %s, elsewhere %s", who.name, call.method, target+call.path, code, raw, first)
				}
			}
		}
	}
	// plans are bound to their caller: bob may read acl_it.open, but not
	// use admin's plan of it
	bob := oauthToken(t, c, "AKBOB00000000000", "bob-secret")
	open := tbl("acl_it", "open")
	code, res, _ := restCall(t, http.MethodPost, open+"/plan", admin, map[string]any{})
	if code != 200 || res["status"] != "completed" {
		t.Fatalf("admin's plan of acl_it.open: %d %v", code, res)
	}
	id, _ := res["plan-id"].(string)
	if len(id) < 20 {
		t.Fatalf("plan id %q is short", id)
	}
	if code, _, raw := restCall(t, http.MethodPost, open+"/plan", bob, map[string]any{}); code != 200 {
		t.Fatalf("bob's plan of acl_it.open: %d %s", code, raw)
	}
	if code, res, _ := restCall(t, http.MethodDelete, open+"/plan/"+id, bob, nil); code != 404 || res["error"].(map[string]any)["type"] != "NoSuchPlanIdException" {
		t.Fatalf("bob cancels admin's plan: %d %v; want 404 NoSuchPlanIdException", code, res)
	}
	if code, _, _ := restCall(t, http.MethodDelete, open+"/plan/"+id, admin, nil); code != 204 {
		t.Fatalf("admin cancels admin's plan: %d; want 204", code)
	}
}

// `weed server -s3 -pushdown` serves scan planning on its Iceberg REST port
// too, and upstream's routes keep working through it (the demo load creates
// the table bucket, namespace and table through them).
func TestWeedServerServesScanPlanningOnItsIcebergPort(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartServer(t, harness.ServerOptions{})
	weed := pushdownCLI(t, c)
	weed("demo", "-table", "srvplan.events", "-rows", "4000", "-files", "4", "-rowGroupRows", "500", "-indexed", "none")
	tbl, err := c.Iceberg(t).LoadTable(context.Background(), table.Identifier{"srvplan", "events"})
	if err != nil {
		t.Fatal(err)
	}
	local, remote := sameRowsRemoteAndLocal(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(50)), "id", "status")
	if len(remote.ids) != 50 || local.files != 4 {
		t.Fatalf("id < 50 on weed server: %d rows, local planning named %d files", len(remote.ids), local.files)
	}
}
