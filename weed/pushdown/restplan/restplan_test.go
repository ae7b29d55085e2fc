package restplan

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
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
	p := s.add("alice", "t1", func() {})
	if s.add("alice", "t1", func() {}) == nil || s.add("bob", "t1", func() {}) != nil {
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
	p := s.add("alice", "t", func() {})
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
