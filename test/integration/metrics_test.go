package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// metricsSpec is a demo table of 6 files of 48 row groups each, with page
// indexes and bloom filters everywhere: its footers (about 0.3 MiB each as
// cached) overflow a 1 MiB footer cache, so planning it twice evicts.
func metricsSpec() demo.Spec {
	s := demo.DefaultSpec()
	s.Rows, s.Files, s.RowGroupRows, s.PageBytes, s.Indexed = 6*48*100, 6, 100, 1024, demo.IndexedAll
	return s
}

// startMetricsCluster starts a cluster with S3 identities (admin, alice),
// a 1 MiB catalog footer cache, a slow-plan threshold of 1 ms (every plan
// of the workload takes longer: each reads footers from the filer) and
// /metrics served; it returns the cluster and its metrics URL.
func startMetricsCluster(t *testing.T) (*harness.Cluster, string) {
	t.Helper()
	o := harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(accessIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json", "-pushdown.footerCacheMB=1", "-pushdown.slowPlanMs=1"},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	}
	url := harness.WithMetrics(t, &o)
	return harness.StartMini(t, o), url
}

// pushdownSeries counts the series of every SeaweedFS_pushdown_ family.
func pushdownSeries(f harness.Families) int {
	n := 0
	for name := range f {
		if strings.HasPrefix(name, "SeaweedFS_pushdown_") {
			n += f.Series(name)
		}
	}
	return n
}

// A workload of plans, a connector query, a volume read, refused calls and
// footer cache evictions moves the pushdown metrics on /metrics by exactly
// what it did; 1,000 plans of distinct tables add no series.
func TestMetricsEndpointCountsWhatTheWorkloadDid(t *testing.T) {
	c, url := startMetricsCluster(t)
	ctx := context.Background()
	spec := metricsSpec()
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "metrics_it.events", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	admin := c.Endpoints()
	cat := c.Catalog(t)
	plan := func(e interface {
		SignPlan(context.Context, string, *pushdown_pb.ParquetPushdownRequest) (context.Context, error)
	}, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
		t.Helper()
		sctx := ctx
		if e != nil {
			var err error
			if sctx, err = e.SignPlan(ctx, c.CatalogAddr(), req); err != nil {
				t.Fatal(err)
			}
		}
		return cat.Plan(sctx, req)
	}
	before := harness.Scrape(t, url)
	value := func(f harness.Families, family string, labels ...string) float64 {
		v, _ := f.Value(family, labels...)
		return v
	}
	delta := func(after harness.Families, family string, labels ...string) float64 {
		return value(after, family, labels...) - value(before, family, labels...)
	}

	// Three served plans: everything, twice (the second evicts footers the
	// first loaded: 6 files' footers do not fit 1 MiB), and a selective one.
	req, err := cli.BuildPlanRequest(ctx, admin, "metrics_it.events", 0, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var filesTotal, filesPruned, rgTotal, rgPruned, bytesTotal, bytesPlanned int64
	pruned := map[string]int64{}
	for _, where := range []string{"", "", "ts < " + "TIMESTAMP '" + spec.TimestampOf(150).Format("2006-01-02 15:04:05") + "'"} {
		req, err := cli.BuildPlanRequest(ctx, admin, "metrics_it.events", 0, where, "id")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := plan(admin, req)
		if err != nil {
			t.Fatalf("plan WHERE %q: %v", where, err)
		}
		st := resp.GetStats()
		filesTotal, filesPruned = filesTotal+st.GetFilesTotal(), filesPruned+st.GetFilesPruned()
		rgTotal, rgPruned = rgTotal+st.GetRowGroupsTotal(), rgPruned+st.GetRowGroupsPruned()
		bytesTotal, bytesPlanned = bytesTotal+st.GetBytesTotal(), bytesPlanned+st.GetBytesPlanned()
		for _, tr := range st.GetTiers() {
			pruned[tr.GetTier()] += tr.GetRowGroupsPruned()
		}
	}
	if rgPruned == 0 || filesPruned == 0 {
		t.Fatalf("the selective plan pruned nothing (files %d, row groups %d): the workload does not exercise pruning", filesPruned, rgPruned)
	}

	// Refusals: an unsigned plan, and alice planning a table she may not read.
	if _, err := plan(nil, req); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("unsigned plan: %v; want PERMISSION_DENIED", err)
	}
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	if _, err := plan(alice, &pushdown_pb.ParquetPushdownRequest{Table: "metrics_it.events"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice's plan: %v; want PERMISSION_DENIED", err)
	}

	// A connector query, pushed down (its bytes through the gateway, so the
	// volume's read counters below count only the one ReadRanges call).
	conn, err := connector.New(ctx, connector.Options{Endpoints: admin, Force: true, NoFallback: true, Read: connector.ReadS3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := conn.Query(ctx, connector.Query{Table: "metrics_it.events", Where: "id < 100", Select: []string{"id"}})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.NumRows() != 100 {
		t.Fatalf("connector query: %d rows, want 100", res.NumRows())
	}
	res.Release()

	// A volume read of 1,000 bytes of a data file.
	files, err := plan(admin, req)
	if err != nil {
		t.Fatal(err)
	}
	rr := &pushdown_pb.ReadRangesRequest{Path: files.GetFiles()[0].GetFile(), Ranges: []*pushdown_pb.FileRange{{Offset: 4, Length: 1000}}}
	vctx, err := admin.SignCall(ctx, c.VolumePushdownAddr(), "ReadRanges", rr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Volume(t).ReadRanges(vctx, rr); err != nil {
		t.Fatalf("ReadRanges: %v", err)
	}

	after := harness.Scrape(t, url)
	const served = 5 // 3 plans, the connector's plan, the plan listing files
	exact := []struct {
		family string
		labels []string
		want   float64
	}{
		{"SeaweedFS_pushdown_rpc_requests_total", []string{"service", "catalog", "method", "Plan", "code", "OK"}, served},
		{"SeaweedFS_pushdown_rpc_requests_total", []string{"service", "catalog", "method", "Plan", "code", "PermissionDenied"}, 2},
		{"SeaweedFS_pushdown_rpc_duration_seconds", []string{"service", "catalog", "method", "Plan"}, served + 2},
		{"SeaweedFS_pushdown_rpc_requests_total", []string{"service", "volume", "method", "ReadRanges", "code", "OK"}, 1},
		{"SeaweedFS_pushdown_access_refusals_total", []string{"reason", "unsigned"}, 1},
		{"SeaweedFS_pushdown_access_refusals_total", []string{"reason", "table"}, 1},
		{"SeaweedFS_pushdown_plans_total", nil, served},
		{"SeaweedFS_pushdown_plans_slow_total", nil, served},
		{"SeaweedFS_pushdown_volume_read_bytes_total", nil, 1000},
	}
	for _, e := range exact {
		if got := delta(after, e.family, e.labels...); got != e.want {
			t.Errorf("%s%v moved by %v, want %v", e.family, e.labels, got, e.want)
		}
	}
	// The three plans of this test are known exactly; the connector's
	// plan and the listing plan add theirs on top (at least their totals).
	atLeast := []struct {
		family string
		labels []string
		min    float64
	}{
		{"SeaweedFS_pushdown_plan_considered_total", []string{"unit", "files"}, float64(filesTotal + 2*int64(spec.Files))},
		{"SeaweedFS_pushdown_plan_considered_total", []string{"unit", "row_groups"}, float64(rgTotal)},
		{"SeaweedFS_pushdown_plan_pruned_total", []string{"tier", "manifest", "unit", "row_groups"}, float64(pruned["manifest"])},
		{"SeaweedFS_pushdown_plan_pruned_total", []string{"tier", "footer_stats", "unit", "row_groups"}, float64(pruned["footer_stats"])},
		{"SeaweedFS_pushdown_plan_bytes_total", []string{"kind", "projected"}, float64(bytesTotal)},
		{"SeaweedFS_pushdown_plan_bytes_total", []string{"kind", "planned"}, float64(bytesPlanned)},
		{"SeaweedFS_pushdown_cache_evictions_total", []string{"service", "catalog", "cache", "footer"}, 1},
		{"SeaweedFS_pushdown_cache_misses_total", []string{"service", "catalog", "cache", "footer"}, float64(spec.Files)},
		{"SeaweedFS_pushdown_footer_cache_evictions_total", []string{"cache", "catalog"}, 1},
	}
	for _, e := range atLeast {
		if got := delta(after, e.family, e.labels...); got < e.min || (e.min > 0 && got <= 0) {
			t.Errorf("%s%v moved by %v, want at least %v ", e.family, e.labels, got, e.min)
		}
	}
	for _, family := range []string{"SeaweedFS_pushdown_cache_entries", "SeaweedFS_pushdown_cache_bytes", "SeaweedFS_pushdown_cache_capacity_bytes",
		"SeaweedFS_pushdown_cache_hits_total", "SeaweedFS_pushdown_freshness_events_total", "SeaweedFS_pushdown_delete_bitmap_cache_bytes"} {
		if after[family] == nil {
			t.Errorf("family %s is missing from /metrics", family)
		}
	}
	for _, cache := range []string{"footer", "bloom_filter", "deletes.on_catalog"} {
		if _, ok := after.Value("SeaweedFS_pushdown_cache_bytes", "service", "catalog", "cache", cache); !ok {
			t.Errorf("no catalog cache_bytes series for cache %s", cache)
		}
	}
	// (the volume service's delete caches appear with its first ComputeDeletes)
	if _, ok := after.Value("SeaweedFS_pushdown_cache_bytes", "service", "volume", "cache", "footer"); !ok {
		t.Errorf("no volume cache_bytes series for its footer cache")
	}

	// 1,000 plans of distinct tables that do not exist: counted, and not
	// one series more for them.
	series := pushdownSeries(after)
	for i := range 1000 {
		if _, err := plan(admin, &pushdown_pb.ParquetPushdownRequest{Table: fmt.Sprintf("metrics_it.missing_%04d", i)}); status.Code(err) != codes.NotFound {
			t.Fatalf("plan of a table that does not exist: %v; want NOT_FOUND", err)
		}
	}
	final := harness.Scrape(t, url)
	if got := value(final, "SeaweedFS_pushdown_rpc_requests_total", "service", "catalog", "method", "Plan", "code", "NotFound") -
		value(after, "SeaweedFS_pushdown_rpc_requests_total", "service", "catalog", "method", "Plan", "code", "NotFound"); got != 1000 {
		t.Errorf("NOT_FOUND plans moved by %v, want 1000", got)
	}
	// The first NOT_FOUND adds its code's series (counter; histogram has no code).
	if got := pushdownSeries(final); got > series+1 {
		t.Errorf("1,000 distinct tables grew the pushdown series from %d to %d", series, got)
	}
	for name, mf := range final {
		if !strings.HasPrefix(name, "SeaweedFS_pushdown_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "missing_") || strings.Contains(l.GetValue(), "metrics_it") {
					t.Fatalf("%s carries a table name as label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// Every family the Grafana dashboard queries is on the endpoint.
	used, err := harness.DashboardFamilies(filepath.Join("..", "..", harness.DashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	for name, panels := range used {
		if final[name] == nil {
			t.Errorf("dashboard panels %q query %s, which the cluster's /metrics does not carry", panels, name)
		}
	}

	// weed pushdown status shows the plan figures without Prometheus.
	sreq := &pushdown_pb.StatusRequest{}
	sctx, err := admin.SignCall(ctx, c.CatalogAddr(), "Status", sreq)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cat.Status(sctx, sreq)
	if err != nil {
		t.Fatal(err)
	}
	if st.GetPlansServed() != served || st.GetPlansFailed() != 1002 || st.GetPlanP50Micros() <= 0 || st.GetPlanP99Micros() < st.GetPlanP50Micros() {
		t.Fatalf("status: %d plans served, %d failed, p50 %d µs, p99 %d µs; want %d served, 1002 failed, 0 < p50 <= p99",
			st.GetPlansServed(), st.GetPlansFailed(), st.GetPlanP50Micros(), st.GetPlanP99Micros(), served)
	}
	var out strings.Builder
	cli.PrintStatus(&out, st)
	for _, want := range []string{fmt.Sprintf("plans           %d served, 1002 failed", served), "plan latency    p50 ", "side indexes    side-index builds since start: 0 done, 0 failed; 0 tables waiting", "hit rate "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("status output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("%s", out.String())

	// Slow plans are logged at V(0), one line each, with what they cost.
	// (glog writes INFO lines to weed.INFO in the cluster's -logdir and
	// flushes it at exit)
	if err := c.Proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop the cluster: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(c.Dir, "weed.INFO"))
	if err != nil {
		t.Fatal(err)
	}
	slowLines := 0
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "pushdown: SLOW plan") {
			slowLines++
			for _, field := range []string{`table="metrics_it.events"`, "snapshot=", "files=", "row_groups=", "pages=", "bytes_planned=", "took=", "trust=", "indexes_missing="} {
				if !strings.Contains(line, field) {
					t.Fatalf("slow plan line lacks %q: %s", field, line)
				}
			}
		}
	}
	if slowLines != served {
		t.Logf("weed.INFO (%d bytes), last lines:\n%s", len(log), lastLines(string(log), 15))
		t.Fatalf("%d slow plan lines in the log, want %d", slowLines, served)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
