// Package restplan serves the Iceberg REST catalog's server-side scan
// planning endpoints from lakeweed's planner, in front of upstream
// SeaweedFS's Iceberg REST catalog, which serves everything else unchanged.
//
//	client ──▶ :8181 Front (the port the user asked upstream's catalog to use)
//	             │ POST   .../tables/{t}/plan            ─┐ authorized by a LoadTable
//	             │ GET    .../tables/{t}/plan/{plan-id}   │ of the same table with the
//	             │ DELETE .../tables/{t}/plan/{plan-id}   │ caller's credentials
//	             │ POST   .../tables/{t}/tasks           ─┘ (upstream decides, we relay)
//	             │      └▶ catalog.Service.PlanScan (manifests, footers, blooms, page
//	             │         indexes, side indexes, deletes) ─▶ FileScanTasks, pages
//	             │ GET /v1/config          ─▶ proxied; endpoints gain the four above
//	             │ GET .../tables/{t}      ─▶ proxied; config gains scan-planning-mode
//	             │                            when the table property asks for it
//	             └ anything else           ─▶ proxied unchanged
//	                    ▼
//	           upstream Iceberg REST catalog on an internal port (launch moves it)
//
// Plans are kept in memory: small ones are answered "completed" with their
// tasks inline, plans that take longer than Config.SyncWait are answered
// "submitted" and polled, and results of more than Config.TasksPerPage tasks
// are split into plan tasks fetched page by page. Plans expire
// Config.PlanTTL after their last use; plan ids are 128 random bits, bound
// to the caller and the table that made them.
package restplan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// TableProperty is the table property that, set to "server" (or "client"),
// puts scan-planning-mode into the config of the table's LoadTable answer,
// so Iceberg Java, PyIceberg and DuckDB plan that table on the server (or
// locally) without any client-side setting.
const TableProperty = "lakeweed.scan-planning-mode"

// Config tunes the scan-planning endpoints (the -pushdown.rest.* flags).
type Config struct {
	// SyncWait is how long planTableScan waits for a plan before answering
	// "submitted" (0: every plan is answered "submitted").
	SyncWait time.Duration
	// TasksPerPage bounds the file scan tasks of one answer: a plan with
	// more is split into plan tasks of this many.
	TasksPerPage int
	// PlanTTL is how long a plan is kept after its last use.
	PlanTTL time.Duration
	// MaxPlans bounds the plans kept at once (running or holding pages);
	// past it new plans are refused with 503 until some finish or expire.
	MaxPlans int
	// MaxRequestBytes bounds a request body.
	MaxRequestBytes int64
	// AuthTTL is how long upstream's LoadTable answer 200 to a caller is
	// remembered for that caller's credential and table (0: not at all).
	AuthTTL time.Duration
}

// DefaultConfig is the configuration of the flag defaults.
func DefaultConfig() Config {
	return Config{SyncWait: 30 * time.Second, TasksPerPage: 1000, PlanTTL: 10 * time.Minute, MaxPlans: 256, MaxRequestBytes: 1 << 20,
		AuthTTL: 2 * time.Second}
}

// ScanPlanner plans scans (catalog.Service).
type ScanPlanner interface {
	PlanScan(ctx context.Context, req catalog.ScanRequest) (*catalog.ScanResult, error)
}

// Front is the HTTP handler on the Iceberg REST port.
type Front struct {
	cfg      Config
	upstream *url.URL
	proxy    *httputil.ReverseProxy
	probe    *http.Client
	planner  atomic.Pointer[plannerBox]
	sigv4    atomic.Pointer[verifierBox] // nil: AWS-signed requests are answered 503
	plans    *store
	auth     *authCache // nil: every request asks upstream
	stop     context.CancelFunc
}

type plannerBox struct{ p ScanPlanner }

// New returns a Front proxying to the upstream Iceberg REST catalog at
// upstream (http://host:port).
func New(upstream string, cfg Config) (*Front, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("upstream Iceberg REST catalog %q: not a URL", upstream)
	}
	d := DefaultConfig()
	if cfg.TasksPerPage <= 0 {
		cfg.TasksPerPage = d.TasksPerPage
	}
	if cfg.PlanTTL <= 0 {
		cfg.PlanTTL = d.PlanTTL
	}
	if cfg.MaxPlans <= 0 {
		cfg.MaxPlans = d.MaxPlans
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = d.MaxRequestBytes
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	f := &Front{cfg: cfg, upstream: u, probe: &http.Client{Transport: transport, Timeout: time.Minute}, auth: newAuthCache(cfg.AuthTTL)}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // upstream signs and advertises by the client's host
			pr.SetXForwarded()
			// the answer is rewritten: plain bytes, unless the request is
			// AWS-signed (PyIceberg signs Accept-Encoding; upstream's
			// catalog answers uncompressed anyway, and a compressed answer
			// is relayed as it came)
			if rewriteOf(pr.In.Context()) != nil && !access.IsSigV4(pr.In.Header.Get("Authorization")) {
				pr.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport:      transport,
		ModifyResponse: f.modifyResponse,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			glog.V(1).Infof("pushdown: Iceberg REST proxy %s %s: %v", r.Method, perrQuote(r.URL.Path), err)
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "the Iceberg REST catalog is not reachable yet")
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.plans = newStore(cfg)
	safe.Go("REST scan plan janitor", func() { f.plans.janitor(ctx) })
	return f, nil
}

// SetPlanner attaches the planner once the catalog pushdown service runs;
// until then the planning endpoints answer 503.
func (f *Front) SetPlanner(p ScanPlanner) { f.planner.Store(&plannerBox{p: p}) }

// Close cancels running plans and drops every plan.
func (f *Front) Close() {
	f.stop()
	f.plans.closeAll()
}

func (f *Front) scanPlanner() ScanPlanner {
	if b := f.planner.Load(); b != nil {
		return b.p
	}
	return nil
}

// route is a request path taken apart.
type route struct {
	kind      routeKind
	prefix    string   // raw (escaped) {prefix} segment, "" when absent
	rawNS     string   // raw {namespace} segment
	rawTable  string   // raw {table} segment
	namespace []string // decoded namespace levels
	table     string
	planID    string
}

type routeKind int

const (
	routeOther routeKind = iota
	routeConfig
	routeLoadTable
	routePlan
	routePlanID
	routeTasks
)

// parseRoute recognizes the paths the Front serves or rewrites: /v1/config
// and, with or without a {prefix}, .../namespaces/{ns}/tables/{t}[/plan[/{id}]|/tasks].
// Repeated leading /v1 segments collapse as upstream collapses them.
func parseRoute(escapedPath string) route {
	segs := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	if len(segs) == 0 || segs[0] != "v1" {
		return route{}
	}
	for len(segs) >= 2 && segs[1] == "v1" {
		segs = segs[1:]
	}
	if len(segs) == 2 && segs[1] == "config" {
		return route{kind: routeConfig}
	}
	rt := route{}
	i := 1
	if len(segs) > 2 && segs[1] != "namespaces" {
		rt.prefix, i = segs[1], 2
	}
	if len(segs) < i+4 || segs[i] != "namespaces" || segs[i+2] != "tables" {
		return route{}
	}
	rt.rawNS, rt.rawTable = segs[i+1], segs[i+3]
	ns, err1 := url.PathUnescape(rt.rawNS)
	tbl, err2 := url.PathUnescape(rt.rawTable)
	if err1 != nil || err2 != nil || ns == "" || tbl == "" {
		return route{}
	}
	for _, p := range strings.Split(ns, "\x1f") {
		if p != "" {
			rt.namespace = append(rt.namespace, p)
		}
	}
	rt.table = tbl
	rest := segs[i+4:]
	switch {
	case len(rest) == 0:
		rt.kind = routeLoadTable
	case len(rest) == 1 && rest[0] == "plan":
		rt.kind = routePlan
	case len(rest) == 2 && rest[0] == "plan":
		id, err := url.PathUnescape(rest[1])
		if err != nil {
			return route{}
		}
		rt.kind, rt.planID = routePlanID, id
	case len(rest) == 1 && rest[0] == "tasks":
		rt.kind = routeTasks
	default:
		return route{}
	}
	return rt
}

// ServeHTTP serves the planning endpoints and proxies the rest.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := parseRoute(r.URL.EscapedPath())
	switch {
	case rt.kind == routeConfig && r.Method == http.MethodGet:
		f.proxy.ServeHTTP(w, withRewrite(r, f.rewriteConfig))
	case rt.kind == routeLoadTable && r.Method == http.MethodGet:
		f.proxy.ServeHTTP(w, withRewrite(r, rewriteLoadTable))
	case rt.kind == routePlan && r.Method == http.MethodPost:
		observed(w, r, rt, "plan", f.servePlan)
	case rt.kind == routePlanID && r.Method == http.MethodGet:
		observed(w, r, rt, "fetch_result", f.serveFetchResult)
	case rt.kind == routePlanID && r.Method == http.MethodDelete:
		observed(w, r, rt, "cancel", f.serveCancel)
	case rt.kind == routeTasks && r.Method == http.MethodPost:
		observed(w, r, rt, "tasks", f.serveTasks)
	default:
		f.proxy.ServeHTTP(w, r)
	}
}

// observed serves a planning endpoint and counts it (metrics.ObserveREST).
func observed(w http.ResponseWriter, r *http.Request, rt route, endpoint string, serve func(http.ResponseWriter, *http.Request, route)) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	serve(sw, r, rt)
	metrics.ObserveREST(endpoint, sw.status, time.Since(start))
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

type rewriteKey struct{}

type rewriteFunc func(body []byte) ([]byte, error)

func withRewrite(r *http.Request, fn rewriteFunc) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), rewriteKey{}, fn))
}

func rewriteOf(ctx context.Context) rewriteFunc {
	fn, _ := ctx.Value(rewriteKey{}).(rewriteFunc)
	return fn
}

// maxRewrittenBody bounds an upstream answer the Front rewrites (a
// LoadTable of a table with a long history is a few MB).
const maxRewrittenBody = 256 << 20

func (f *Front) modifyResponse(resp *http.Response) error {
	fn := rewriteOf(resp.Request.Context())
	if fn == nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRewrittenBody+1))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if len(body) <= maxRewrittenBody {
		if out, err := fn(body); err == nil {
			body = out
		} else {
			glog.V(1).Infof("pushdown: Iceberg REST answer to %s left as is: %v", perrQuote(resp.Request.URL.Path), err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// upstreamEndpoints are the routes upstream's Iceberg REST catalog serves
// (its RegisterRoutes), advertised when it advertises none itself: once a
// server lists endpoints, clients take the list as complete.
var upstreamEndpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/register",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"POST /v1/{prefix}/transactions/commit",
	"GET /v1/{prefix}/namespaces/{namespace}/views",
	"POST /v1/{prefix}/namespaces/{namespace}/views",
	"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/views/rename",
}

// PlanningEndpoints are the scan-planning routes the Front adds.
var PlanningEndpoints = []string{
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
}

// rewriteConfig adds the planning endpoints to GET /v1/config (once the
// planner is attached: before, the catalog answers as upstream does).
func (f *Front) rewriteConfig(body []byte) ([]byte, error) {
	if f.scanPlanner() == nil {
		return body, nil
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(body, &cfg); err != nil {
		return nil, err
	}
	var eps []string
	if raw, ok := cfg["endpoints"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &eps); err != nil {
			return nil, err
		}
	}
	if len(eps) == 0 {
		eps = append(eps, upstreamEndpoints...)
	}
	have := map[string]bool{}
	for _, e := range eps {
		have[e] = true
	}
	for _, e := range PlanningEndpoints {
		if !have[e] {
			eps = append(eps, e)
		}
	}
	raw, err := json.Marshal(eps)
	if err != nil {
		return nil, err
	}
	cfg["endpoints"] = raw
	return json.Marshal(cfg)
}

// rewriteLoadTable puts scan-planning-mode into a LoadTable answer's config
// when the table's TableProperty asks for it.
func rewriteLoadTable(body []byte) ([]byte, error) {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, err
	}
	var md struct {
		Properties map[string]string `json:"properties"`
	}
	if err := json.Unmarshal(res["metadata"], &md); err != nil {
		return nil, err
	}
	mode := md.Properties[TableProperty]
	if mode != "server" && mode != "client" {
		return body, nil
	}
	cfg := map[string]string{}
	if raw, ok := res["config"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, err
		}
	}
	cfg["scan-planning-mode"] = mode
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	res["config"] = raw
	return json.Marshal(res)
}
