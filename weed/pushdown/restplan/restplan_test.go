package restplan

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

func TestRoutesAreRecognizedWithAndWithoutPrefixAndRepeatedV1(t *testing.T) {
	for path, want := range map[string]route{
		"/v1/config":    {kind: routeConfig},
		"/v1/v1/config": {kind: routeConfig},
		"/v1/wh/namespaces/a%1Fb/tables/t": {kind: routeLoadTable, prefix: "wh", rawNS: "a%1Fb", rawTable: "t",
			namespace: []string{"a", "b"}, table: "t"},
		"/v1/namespaces/ns/tables/t/plan":          {kind: routePlan, rawNS: "ns", rawTable: "t", namespace: []string{"ns"}, table: "t"},
		"/v1/wh/namespaces/ns/tables/t/plan/a%2Fb": {kind: routePlanID, prefix: "wh", rawNS: "ns", rawTable: "t", namespace: []string{"ns"}, table: "t", planID: "a/b"},
		"/v1/wh/namespaces/ns/tables/t/tasks":      {kind: routeTasks, prefix: "wh", rawNS: "ns", rawTable: "t", namespace: []string{"ns"}, table: "t"},
		"/v1/wh/namespaces/ns/tables/t/metrics":    {},
		"/v1/wh/namespaces/ns":                     {},
		"/v2/config":                               {},
	} {
		got := parseRoute(path)
		if got.kind != want.kind || got.prefix != want.prefix || got.table != want.table || got.planID != want.planID ||
			strings.Join(got.namespace, ".") != strings.Join(want.namespace, ".") {
			t.Errorf("%s: %+v; want %+v", path, got, want)
		}
	}
}

func TestConfigAdvertisesUpstreamsRoutesAndThePlanningEndpointsOnceThePlannerRuns(t *testing.T) {
	f, err := New("http://127.0.0.1:1", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := []byte(`{"defaults":{},"overrides":{"prefix":"wh"}}`)
	out, _ := f.rewriteConfig(in)
	if string(out) != string(in) {
		t.Fatalf("before the planner runs: %s", out)
	}
	f.SetPlanner(fakePlanner{})
	out, err = f.rewriteConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Endpoints []string          `json:"endpoints"`
		Overrides map[string]string `json:"overrides"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Overrides["prefix"] != "wh" || len(cfg.Endpoints) != len(upstreamEndpoints)+len(PlanningEndpoints) {
		t.Fatalf("rewritten config: %s", out)
	}
	// a server listing endpoints of its own keeps them, gains ours once
	out, _ = f.rewriteConfig([]byte(`{"endpoints":["GET /v1/{prefix}/namespaces","` + PlanningEndpoints[0] + `"]}`))
	if err := json.Unmarshal(out, &cfg); err != nil || len(cfg.Endpoints) != 1+len(PlanningEndpoints) {
		t.Fatalf("rewritten config: %s", out)
	}
}

func TestLoadTableConfigFollowsTheTableProperty(t *testing.T) {
	for props, want := range map[string]string{
		`{}`: "",
		`{"lakeweed.scan-planning-mode":"server"}`: "server",
		`{"lakeweed.scan-planning-mode":"client"}`: "client",
		`{"lakeweed.scan-planning-mode":"bogus"}`:  "",
	} {
		out, err := rewriteLoadTable([]byte(`{"metadata-location":"s3://b/x","metadata":{"properties":` + props + `},"config":{"s3.endpoint":"e"}}`))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Config map[string]string `json:"config"`
		}
		_ = json.Unmarshal(out, &res)
		if res.Config["scan-planning-mode"] != want || res.Config["s3.endpoint"] != "e" {
			t.Errorf("properties %s: config %v; want scan-planning-mode %q", props, res.Config, want)
		}
	}
}

func testSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "Part", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
	)
}

func TestFiltersBindNamesWithTheRequestsCaseSensitivity(t *testing.T) {
	s := testSchema()
	raw := json.RawMessage(`{"type":"and","left":{"type":"eq","term":"part","value":"a"},"right":{"type":"lt","term":"ID","value":5}}`)
	if _, err := compileFilter(raw, s, true); perr.KindOf(err) != perr.InvalidArgument || !strings.Contains(err.Error(), `"part"`) {
		t.Fatalf("case-sensitive: %v", err)
	}
	c, err := compileFilter(raw, s, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.ids), `"field-id":2`) || !strings.Contains(string(c.full), `"term":"Part"`) {
		t.Fatalf("bound: %s / %s", c.ids, c.full)
	}
	long := strings.Repeat("z", 10_000)
	_, err = compileFilter(json.RawMessage(`{"type":"eq","term":"`+long+`","value":1}`), s, true)
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("a long unknown name: %v", err)
	}
	deep := strings.Repeat(`{"type":"not","child":`, 200) + `true` + strings.Repeat(`}`, 200)
	if _, err := compileFilter(json.RawMessage(deep), s, true); err == nil {
		t.Fatal("a filter 200 levels deep was accepted")
	}
}

func TestResidualsReplaceIdentityPartitionLeavesByTheirValue(t *testing.T) {
	s := testSchema()
	c, err := compileFilter(json.RawMessage(`{"type":"or","left":{"type":"and","left":{"type":"eq","term":"Part","value":"a"},"right":{"type":"lt","term":"id","value":5}},"right":{"type":"not","child":{"type":"is-null","term":"Part"}}}`), s, true)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	// Part = "a": (TRUE AND id < 5) OR NOT FALSE = TRUE
	if got := enc(c.root.residual(partitionValues{2: "a"})); got != "true" {
		t.Fatalf("Part = a: %s", got)
	}
	// Part NULL: (NULL = 'a' stays: unknown) ... OR NOT TRUE
	if got := enc(c.root.residual(partitionValues{2: nil})); got != `{"left":{"term":"id","type":"lt","value":5},"right":{"term":"Part","type":"eq","value":"a"},"type":"and"}` &&
		got != `{"left":{"term":"Part","type":"eq","value":"a"},"right":{"term":"id","type":"lt","value":5},"type":"and"}` {
		t.Fatalf("Part NULL: %s", got)
	}
	// no partition values: the whole filter
	if got := enc(c.root.residual(nil)); got != string(c.full) {
		t.Fatalf("no partition: %s vs %s", got, c.full)
	}
}

type fakePlanner struct {
	delay time.Duration
	err   error
}

func (p fakePlanner) PlanScan(ctx context.Context, req catalog.ScanRequest) (*catalog.ScanResult, error) {
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, p.err
}

func TestPlansAreBoundToCallerAndTableAndExpire(t *testing.T) {
	s := newStore(Config{PlanTTL: 50 * time.Millisecond, MaxPlans: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.janitor(ctx)
	p, _ := s.add("alice", "t1", func() {})
	if q, _ := s.add("carol", "t1", func() {}); q == nil {
		t.Fatal("a second caller's plan refused under MaxPlans 2")
	}
	if q, callerFull := s.add("bob", "t1", func() {}); q != nil || callerFull {
		t.Fatal("MaxPlans 2 was not enforced")
	}
	if s.get(p.id, "bob", "t1") != nil || s.get(p.id, "alice", "t2") != nil || s.get(p.id, "alice", "t1") == nil {
		t.Fatal("a plan answered another caller or table")
	}
	if len(p.id) != 22 {
		t.Fatalf("plan id %q is not 128 bits", p.id)
	}
	time.Sleep(150 * time.Millisecond)
	if s.get(p.id, "alice", "t1") != nil {
		t.Fatal("an expired plan is still served")
	}
}

// One caller holds at most an eighth of MaxPlans: past it its own plans
// are refused (saying so), while another caller's are still taken; a plan
// it drops makes room again.
func TestOneCallerHoldsOnlyItsShareOfThePlans(t *testing.T) {
	s := newStore(Config{PlanTTL: time.Hour, MaxPlans: 16})
	var held []*scanPlan
	for i := 0; i < 2; i++ {
		p, _ := s.add("alice", "t", func() {})
		if p == nil {
			t.Fatalf("plan %d of alice's share of 2 refused", i+1)
		}
		held = append(held, p)
	}
	if p, callerFull := s.add("alice", "t", func() {}); p != nil || !callerFull {
		t.Fatalf("a third plan of alice: %v (caller full %v), want refused as her share", p, callerFull)
	}
	if p, _ := s.add("bob", "t", func() {}); p == nil {
		t.Fatal("bob refused while alice holds her share")
	}
	s.drop(held[0])
	if p, _ := s.add("alice", "t", func() {}); p == nil {
		t.Fatal("alice refused after dropping a plan")
	}
}

// A caller is authorized (LoadTable, with its own credentials) before its
// body is read: one that may not read the table gets LoadTable's refusal
// whatever it sent; one that may gets its oversized body refused.
func TestCallersAreAuthorizedBeforeTheirBoundedBodiesAreRead(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"message":"Forbidden","type":"ForbiddenException","code":403}}`))
			return
		}
		_, _ = w.Write([]byte(`{"metadata-location":"s3://wh/ns/t-1/metadata/v1.metadata.json","metadata":{"location":"s3://wh/ns/t-1","properties":{}}}`))
	}))
	defer upstream.Close()
	f, err := New(upstream.URL, Config{MaxRequestBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.SetPlanner(fakePlanner{})
	for _, tc := range []struct {
		auth, body string
		code       int
		says       string
	}{
		{"Bearer bad", `{"select":["` + strings.Repeat("x", 4096) + `"]}`, http.StatusForbidden, "ForbiddenException"},
		{"Bearer bad", `{not json`, http.StatusForbidden, "ForbiddenException"},
		{"Bearer good", `{"select":["` + strings.Repeat("x", 4096) + `"]}`, http.StatusBadRequest, "over 1024 bytes"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/wh/namespaces/ns/tables/t/plan", strings.NewReader(tc.body))
		r.Header.Set("Authorization", tc.auth)
		f.ServeHTTP(w, r)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.says) {
			t.Fatalf("%s with a body of %d bytes: %d %s; want %d saying %q", tc.auth, len(tc.body), w.Code, w.Body, tc.code, tc.says)
		}
	}
}

func TestAPlanWhosePlanTasksWereAllFetchedIsKeptOnlyBriefly(t *testing.T) {
	s := newStore(Config{PlanTTL: time.Hour, MaxPlans: 4})
	p, _ := s.add("alice", "t", func() {})
	p.pages = make([]page, 3)
	p.markFetched(1)
	p.markFetched(1)
	if p.drained || s.get(p.id, "alice", "t") == nil || time.Until(p.expires) < 59*time.Minute {
		t.Fatal("a plan with a page left was not kept for its TTL")
	}
	p.markFetched(2)
	if !p.drained || s.get(p.id, "alice", "t") == nil || time.Until(p.expires) > drainedGrace {
		t.Fatalf("a drained plan expires in %s; want at most %s", time.Until(p.expires), drainedGrace)
	}
}

// fakeUpstream is upstream's LoadTable: 200 to the tokens in allowed, 403
// to any other, counting the probes.
type fakeUpstream struct {
	mu       sync.Mutex
	allowed  map[string]bool
	location string
	probes   int
}

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.probes++
	if !u.allowed[r.Header.Get("Authorization")] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"message":"Access Denied","type":"ForbiddenException","code":403}}`))
		return
	}
	_, _ = w.Write([]byte(`{"metadata-location":"` + u.location + `","metadata":{"location":"s3://wh/ns/t-1","properties":{}}}`))
}

func (u *fakeUpstream) set(token string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.allowed[token] = ok
}

func (u *fakeUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.probes
}

// locatingPlanner is a planner whose table's metadata location can move.
type locatingPlanner struct {
	fakePlanner
	mu       sync.Mutex
	location string
}

func (p *locatingPlanner) MetadataLocation(ctx context.Context, name tables.Name) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.location, nil
}

func jwtWithExp(exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"access_key":"AK","exp":` + strconv.FormatInt(exp.Unix(), 10) + `}`))
	return "Bearer eyJhbGciOiJIUzI1NiJ9." + payload + ".c2ln"
}

// A LoadTable 200 is remembered for AuthTTL for exactly the credential,
// host and table it answered: refusals are never remembered, another
// credential or table asks upstream, a revoked caller is refused (with
// upstream's own answer) once the TTL or its token's exp passes, and a
// plan request asks again when the table's metadata location moved.
func TestAuthorizationsAreRememberedBrieflyPerCredentialAndTable(t *testing.T) {
	up := &fakeUpstream{allowed: map[string]bool{"Bearer good": true}, location: "s3://wh/ns/t-1/metadata/v1.metadata.json"}
	srv := httptest.NewServer(up)
	defer srv.Close()
	f, err := New(srv.URL, Config{AuthTTL: 2 * time.Second, SyncWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	planner := &locatingPlanner{fakePlanner: fakePlanner{err: perr.New(perr.NotFound, "gone")}, location: up.location}
	f.SetPlanner(planner)
	now := time.Unix(1_000_000, 0)
	f.auth.now = func() time.Time { return now }
	call := func(method, path, auth string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, strings.NewReader(`{}`))
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		f.ServeHTTP(w, r)
		return w
	}
	fetch := "/v1/wh/namespaces/ns/tables/t/plan/nosuchplan"
	expect := func(w *httptest.ResponseRecorder, code int, says string, probes int) {
		t.Helper()
		if w.Code != code || !strings.Contains(w.Body.String(), says) || up.count() != probes {
			t.Fatalf("%d %s after %d probes; want %d saying %q after %d probes", w.Code, w.Body, up.count(), code, says, probes)
		}
	}
	expect(call(http.MethodGet, fetch, "Bearer good"), 404, "NoSuchPlanIdException", 1)
	expect(call(http.MethodGet, fetch, "Bearer good"), 404, "NoSuchPlanIdException", 1)
	expect(call(http.MethodPost, "/v1/wh/namespaces/ns/tables/t/tasks", "Bearer good"), 400, "plan-task", 1)
	// refusals are asked every time
	expect(call(http.MethodGet, fetch, "Bearer bad"), 403, "Access Denied", 2)
	expect(call(http.MethodGet, fetch, "Bearer bad"), 403, "Access Denied", 3)
	expect(call(http.MethodGet, fetch, ""), 403, "Access Denied", 4)
	// another table or host is another question
	expect(call(http.MethodGet, "/v1/wh/namespaces/ns/tables/u/plan/x", "Bearer good"), 404, "NoSuchPlanIdException", 5)
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, fetch, nil)
	r.Host, r.Header["Authorization"] = "other.example", []string{"Bearer good"}
	f.ServeHTTP(w, r)
	expect(w, 404, "NoSuchPlanIdException", 6)
	// a plan asks again when the table moved on
	expect(call(http.MethodPost, "/v1/wh/namespaces/ns/tables/t/plan", "Bearer good"), 404, "NoSuchTableException", 6)
	planner.mu.Lock()
	planner.location = "s3://wh/ns/t-1/metadata/v2.metadata.json"
	planner.mu.Unlock()
	up.mu.Lock()
	up.location = planner.location
	up.mu.Unlock()
	expect(call(http.MethodPost, "/v1/wh/namespaces/ns/tables/t/plan", "Bearer good"), 404, "NoSuchTableException", 7)
	expect(call(http.MethodPost, "/v1/wh/namespaces/ns/tables/t/plan", "Bearer good"), 404, "NoSuchTableException", 7)
	// revoked: still served within the TTL, refused as LoadTable refuses after it
	up.set("Bearer good", false)
	now = now.Add(1900 * time.Millisecond)
	expect(call(http.MethodGet, fetch, "Bearer good"), 404, "NoSuchPlanIdException", 7)
	now = now.Add(200 * time.Millisecond)
	expect(call(http.MethodGet, fetch, "Bearer good"), 403, "Access Denied", 8)
	expect(call(http.MethodGet, fetch, "Bearer good"), 403, "Access Denied", 9)
	// a token is never remembered past its exp
	soon := jwtWithExp(now.Add(time.Second))
	up.set(soon, true)
	expect(call(http.MethodGet, fetch, soon), 404, "NoSuchPlanIdException", 10)
	expect(call(http.MethodGet, fetch, soon), 404, "NoSuchPlanIdException", 10)
	now = now.Add(1001 * time.Millisecond)
	expect(call(http.MethodGet, fetch, soon), 404, "NoSuchPlanIdException", 11)
	expired := jwtWithExp(now.Add(-time.Second))
	up.set(expired, true)
	expect(call(http.MethodGet, fetch, expired), 404, "NoSuchPlanIdException", 12)
	expect(call(http.MethodGet, fetch, expired), 404, "NoSuchPlanIdException", 13)
	// AuthTTL 0: every request asks
	g, err := New(srv.URL, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.SetPlanner(planner)
	up.set("Bearer good", true)
	for i := 0; i < 2; i++ {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, fetch, nil)
		r.Header.Set("Authorization", "Bearer good")
		g.ServeHTTP(w, r)
	}
	if up.count() != 15 {
		t.Fatalf("with AuthTTL 0: %d probes; want 15", up.count())
	}
}

// Pages are what iceberg-go's own decoder reads back: every task in file
// order, page by page, each page's delete files referenced by index; a
// warm plan copies the data files encoded by the first (byte for byte the
// same pages), a new table metadata encodes them again, and iceberg-go
// alone gets no residual where it is the request's whole filter.
func TestPagesDecodeInIcebergGoAndReuseEncodedDataFiles(t *testing.T) {
	unpartitioned := iceberg.NewPartitionSpecID(0)
	files := make([]plan.DataFile, 5)
	var scan []catalog.ScanFile
	for i := range files {
		files[i] = plan.DataFile{Path: "s3://wh/ns/t/data/f" + strconv.Itoa(i) + ".parquet", Size: int64(1000 + i), RecordCount: 10, SplitOffsets: []int64{4, 500}}
		sf := catalog.ScanFile{Data: &files[i], Planned: true, Index: i}
		if i == 1 || i == 3 {
			sf.Deletes = []deletes.File{{Path: "s3://wh/ns/t/data/pos.parquet", Size: 99, RecordCount: 2, Content: deletes.PositionDeletes, Format: deletes.FormatParquet}}
		}
		if i == 3 {
			sf.Deletes = append(sf.Deletes, deletes.File{Path: "s3://wh/ns/t/data/dv.puffin", Size: 80, RecordCount: 1, Content: deletes.PositionDeletes,
				Format: deletes.FormatPuffin, BlobOffset: 4, BlobLength: 40})
		}
		if i != 2 { // file 2 is pruned
			scan = append(scan, sf)
		}
	}
	filter, err := compileFilter(json.RawMessage(`{"type":"lt","term":"id","value":5}`), testSchema(), true)
	if err != nil {
		t.Fatal(err)
	}
	var derived sync.Map
	res := &catalog.ScanResult{Table: &tables.Table{MetadataLocation: "s3://wh/ns/t/metadata/v1.json"}, FilesTotal: len(files), Derived: &derived}
	build := func(omit bool) []page {
		t.Helper()
		b := &taskBuilder{specs: map[int]iceberg.PartitionSpec{0: unpartitioned}, schema: testSchema(), filter: filter, omitFullResidual: omit, memo: encodedFilesOf(res)}
		pages, n, err := b.pages(scan, 3)
		if err != nil || n != 4 || len(pages) != 2 {
			t.Fatalf("%d tasks in %d pages: %v", n, len(pages), err)
		}
		return pages
	}
	first := build(false)
	var paths []string
	for i, p := range first {
		var got rest.FetchScanTasksResponse
		if err := json.Unmarshal(p.body, &got); err != nil {
			t.Fatalf("page %d does not decode in iceberg-go: %v\n%s", i, err, p.body)
		}
		for _, task := range got.FileScanTasks {
			paths = append(paths, task.DataFile.FilePath)
			if string(task.ResidualFilter) != string(filter.full) {
				t.Fatalf("task %s has residual %s", task.DataFile.FilePath, task.ResidualFilter)
			}
			for _, r := range task.DeleteFileReferences {
				if r >= len(got.DeleteFiles) {
					t.Fatalf("page %d: reference %d of %d delete files", i, r, len(got.DeleteFiles))
				}
			}
		}
		// page 0: f0, f1 (the position deletes), f3 (the same position
		// deletes, listed once, and a DV); page 1: f4, no deletes
		refs := fmt.Sprint(got.FileScanTasks[0].DeleteFileReferences)
		if i == 0 {
			refs += fmt.Sprint(got.FileScanTasks[1].DeleteFileReferences) + fmt.Sprint(got.FileScanTasks[2].DeleteFileReferences)
		}
		if want := []string{"[][0][0 1]", "[]"}[i]; refs != want || len(got.DeleteFiles) != []int{2, 0}[i] {
			t.Fatalf("page %d: references %s (want %s), %d delete files: %s", i, refs, want, len(got.DeleteFiles), p.body)
		}
	}
	if strings.Join(paths, " ") != "s3://wh/ns/t/data/f0.parquet s3://wh/ns/t/data/f1.parquet s3://wh/ns/t/data/f3.parquet s3://wh/ns/t/data/f4.parquet" {
		t.Fatalf("tasks %v", paths)
	}
	memo := encodedFilesOf(res)
	if memo.files[0].Load() == nil || memo.files[2].Load() != nil {
		t.Fatal("the encoded data files were not kept (or a pruned file was)")
	}
	// a warm plan copies the memo: poison it to see it is used
	poisoned := append([]byte(nil), *memo.files[0].Load()...)
	poisoned = bytes.Replace(poisoned, []byte("f0.parquet"), []byte("F0.parquet"), 1)
	memo.files[0].Store(&poisoned)
	if again := build(false); !bytes.Contains(again[0].body, []byte("F0.parquet")) || len(again[1].body) != len(first[1].body) || string(again[1].body) != string(first[1].body) {
		t.Fatal("a warm plan did not reuse the encoded data files")
	}
	res.Table = &tables.Table{MetadataLocation: "s3://wh/ns/t/metadata/v2.json"}
	if again := build(false); string(again[0].body) != string(first[0].body) {
		t.Fatal("new table metadata reused the old encoding")
	}
	for _, p := range build(true) {
		if bytes.Contains(p.body, []byte("residual-filter")) {
			t.Fatalf("iceberg-go got the whole filter as residual: %s", p.body)
		}
	}
}
