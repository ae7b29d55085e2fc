// Package restplanbench measures the Iceberg REST scan-planning endpoints
// (weed/pushdown/restplan) with clients someone else wrote: iceberg-go and
// PyIceberg scanning with remote (server) planning against their own local
// planning, on the 1M-row demo table written with `-indexed none` (btree on
// id, bitmap on tenant_id), and the plan latency of a 10,000-file table.
// Run with `BENCH=restplan ./scripts/bench.sh` (LAKEWEED_BENCH=1).
//
//	load demo (8 files) + indexes, demo (10,000 files)
//	  ─▶ per client, query, mode: files planned (PlanFiles), then one warm-up and
//	     three timed reads: wall ms, bytes the S3 gateway sent (the client's reads)
//	  ─▶ 10,000 files: warm plan latency, remote (plan + every plan task) vs local
//	  ─▶ bench/results/restplan.md and restplan.json
package restplanbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

type query struct {
	Name    string
	Py      string // PyIceberg's filter syntax ("" = none)
	Iceberg iceberg.BooleanExpression
}

var queries = []query{
	{"point lookup id", "id = 123457", iceberg.EqualTo(iceberg.Reference("id"), int64(123457))},
	{"tenant_id equality", "tenant_id = 'tenant-042'", iceberg.EqualTo(iceberg.Reference("tenant_id"), "tenant-042")},
	{"status equality", "status = 'error'", iceberg.EqualTo(iceberg.Reference("status"), "error")},
	{"no predicate", "", iceberg.AlwaysTrue{}},
}

var selected = []string{"id", "tenant_id", "status"}

// Result is one measured (client, query, planning mode).
type Result struct {
	Client, Query, Mode string
	Table               string // "" : bench.events
	Files               int
	Rows                int
	Bytes               int64     // bytes the S3 gateway sent for one read
	WallMs              []float64 // three timed reads
}

// PlanLatency is the 10,000-file table's warm plan latency.
type PlanLatency struct {
	Query, Mode  string
	Files        int
	P50Ms, P99Ms float64
	Runs         int
	// ClientCPUMs and ServerCPUMs are the CPU the client (this process) and
	// the server (weed mini) used per run.
	ClientCPUMs, ServerCPUMs float64
}

func TestRESTPlanBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `BENCH=restplan ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	}
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	bigFiles := 10_000
	if os.Getenv("LAKEWEED_BENCH_QUICK") != "" {
		bigFiles = 1000
	}
	if v, err := strconv.Atoi(os.Getenv("LAKEWEED_RESTPLAN_BIG_FILES")); err == nil && v > 0 {
		bigFiles = v
	}
	// the point lookup on a table of many files: a client planning locally
	// reads every file (ids are not clustered by file), the server's btree
	// plans one; on the 8-file demo the ratio cannot pass 8×
	manyFiles := 1000
	if v, err := strconv.Atoi(os.Getenv("LAKEWEED_RESTPLAN_MANY_FILES")); err == nil && v > 0 {
		manyFiles = v
	}
	// LAKEWEED_RESTPLAN_ONLY=latency measures only the 10,000-file table;
	// LAKEWEED_RESTPLAN_DIR keeps the cluster's data there, so a later run
	// (a rebuilt weed, say) reuses the loaded tables instead of loading them.
	only := os.Getenv("LAKEWEED_RESTPLAN_ONLY")
	dir := os.Getenv("LAKEWEED_RESTPLAN_DIR")
	reuse := false
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, loadedMarker(rows, bigFiles, manyFiles, only)))
		reuse = err == nil
	}
	ports := harness.FreePorts(t, 2)
	metricsPort, debugPort := ports[0], ports[1]
	args := []string{"-metricsPort=" + strconv.Itoa(metricsPort)}
	profileDir := os.Getenv("LAKEWEED_RESTPLAN_PROFILE_DIR")
	if profileDir != "" {
		args = append(args, "-debug", "-debug.port="+strconv.Itoa(debugPort))
	}
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: args, Dir: dir})
	sent := func() int64 {
		return benchutil.ScrapeMetric(t, metricsPort, `SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket="`+c.Warehouse+`"}`)
	}
	ctx := context.Background()
	t0 := time.Now()
	if !reuse {
		if only != "latency" {
			loadDemo(t, c, rows)
			loadMany(t, c, rows, manyFiles)
		}
		big := demo.DefaultSpec()
		big.Rows, big.Files, big.Indexed = 1_000_000, bigFiles, demo.IndexedNone
		if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "bench.events10k", Spec: big}); err != nil {
			t.Fatal(err)
		}
		t.Logf("loaded in %s", time.Since(t0))
		if dir != "" {
			if err := os.WriteFile(filepath.Join(dir, loadedMarker(rows, bigFiles, manyFiles, only)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	cat := c.Iceberg(t)
	var results []Result
	if only != "latency" {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"bench", "events"})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			for _, mode := range []table.ScanPlanningMode{table.ScanPlanningRemote, table.ScanPlanningLocal} {
				results = append(results, icebergGo(t, tbl, q, mode, sent))
			}
		}
		many, err := cat.LoadTable(ctx, table.Identifier{"bench", manyName})
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []table.ScanPlanningMode{table.ScanPlanningRemote, table.ScanPlanningLocal} {
			r := icebergGo(t, many, queries[0], mode, sent)
			r.Table = "bench." + manyName
			results = append(results, r)
		}
		if py := pyiceberg(); py != "" {
			for _, q := range queries {
				for _, mode := range []string{"server", "client"} {
					results = append(results, pyIceberg(t, c, py, "bench.events", q, mode, sent))
				}
			}
			for _, mode := range []string{"server", "client"} {
				r := pyIceberg(t, c, py, "bench."+manyName, queries[0], mode, sent)
				r.Table = "bench." + manyName
				results = append(results, r)
			}
		} else {
			t.Log("PyIceberg is not installed (.tools/pyiceberg): its rows are left out; run ./scripts/install-clients.sh")
		}
		for _, r := range results {
			t.Logf("restplan_bench %s %s %s: %d files, %d rows, %d bytes, %v ms", r.Client, r.Query, r.Mode, r.Files, r.Rows, r.Bytes, r.WallMs)
		}
	}

	// the 10,000-file table's warm plan latency
	ident := table.Identifier{"bench", "events10k"}
	bigTbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	var lat []PlanLatency
	for _, q := range []query{queries[0], queries[3]} {
		stop := func() {}
		pid := c.Proc.Cmd.Process.Pid
		r := remotePlanLatency(t, cat, ident, bigTbl, q, pid, func() { stop = startProfiles(t, profileDir, debugPort, q.Name) })
		stop()
		lat = append(lat, r, remotePlanFilesLatency(t, bigTbl, q, pid), localPlanLatency(t, bigTbl, q, pid))
	}
	for _, l := range lat {
		t.Logf("restplan_bench %d files %s %s: p50 %.1f ms, p99 %.1f ms, CPU per run: client %.1f ms, server %.1f ms (%d files planned)",
			bigFiles, l.Query, l.Mode, l.P50Ms, l.P99Ms, l.ClientCPUMs, l.ServerCPUMs, l.Files)
	}
	if only == "" {
		write(t, rows, bigFiles, manyFiles, results, lat)
	}
}

// loadedMarker names the file that says a kept cluster directory holds the
// benchmark's tables.
func loadedMarker(rows int64, bigFiles, manyFiles int, only string) string {
	if only == "latency" {
		return fmt.Sprintf(".restplan-loaded-latency-%d", bigFiles)
	}
	return fmt.Sprintf(".restplan-loaded-%d-%d-%d", rows, bigFiles, manyFiles)
}

// manyName is the table of many files (bench.<manyName>).
const manyName = "events_many"

// loadMany loads bench.events_many (rows in files files, -indexed none)
// with a btree on id.
func loadMany(t *testing.T, c *harness.Cluster, rows int64, files int) {
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.Indexed = rows, files, demo.IndexedNone
	t0 := time.Now()
	if _, err := demo.Load(context.Background(), demo.LoadOptions{Endpoints: c.Endpoints(), Table: "bench." + manyName, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	pushdownCLI(t, c)("index", "create", "-table", "bench."+manyName, "-column", "id", "-kind", "btree", "-wait")
	t.Logf("loaded and indexed bench.%s (%d files) in %s", manyName, files, time.Since(t0).Round(time.Second))
}

// loadDemo loads bench.events (8 files, -indexed none) with a btree on id
// and a bitmap on tenant_id.
func loadDemo(t *testing.T, c *harness.Cluster, rows int64) {
	spec := demo.DefaultSpec()
	spec.Rows, spec.Indexed = rows, demo.IndexedNone
	if _, err := demo.Load(context.Background(), demo.LoadOptions{Endpoints: c.Endpoints(), Table: "bench.events", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	weed := pushdownCLI(t, c)
	weed("index", "create", "-table", "bench.events", "-column", "id", "-kind", "btree", "-wait")
	weed("index", "create", "-table", "bench.events", "-column", "tenant_id", "-kind", "bitmap", "-wait")
}

// pushdownCLI runs `weed pushdown` against c.
func pushdownCLI(t *testing.T, c *harness.Cluster) func(args ...string) {
	return func(args ...string) {
		e := c.Endpoints()
		args = append(args, "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		if out, errOut, err := harness.Weed(t, append([]string{"pushdown"}, args...)...); err != nil {
			t.Fatalf("weed pushdown %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
}

// startProfiles records CPU profiles of the server (its -debug port) and of
// this process (the client) into dir while the returned func is not called.
func startProfiles(t *testing.T, dir string, debugPort int, query string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	name := strings.ReplaceAll(query, " ", "_")
	f, err := os.Create(filepath.Join(dir, "client-"+name+".pprof"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	server := make(chan []byte, 1)
	go func() {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(debugPort) + "/debug/pprof/profile?seconds=" + strconv.Itoa(serverProfileSeconds))
		if err != nil {
			t.Logf("server profile: %v", err)
			server <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		server <- b
	}()
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if b := <-server; len(b) > 0 {
			if err := os.WriteFile(filepath.Join(dir, "server-"+name+".pprof"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// serverProfileSeconds is how long the server's profile runs: about one
// query's warm remote latency loop.
const serverProfileSeconds = 5

func median(xs []float64) float64 { return benchutil.Median(xs) }

// icebergGo measures iceberg-go's scan (in this process) in mode.
func icebergGo(t *testing.T, tbl *table.Table, q query, mode table.ScanPlanningMode, sent func() int64) Result {
	ctx := context.Background()
	opts := []table.ScanOption{table.WithRowFilter(q.Iceberg), table.WithScanPlanningMode(mode), table.WithSelectedFields(selected...)}
	scan := tbl.Scan(opts...)
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatalf("iceberg-go %s plan of %s: %v", mode, q.Name, err)
	}
	scan.Close()
	files := map[string]bool{}
	for _, task := range tasks {
		files[task.File.FilePath()] = true
	}
	r := Result{Client: "iceberg-go", Query: q.Name, Mode: string(mode), Files: len(files)}
	for i := 0; i < 4; i++ { // one warm-up, three timed
		before := sent()
		t0 := time.Now()
		at, err := tbl.Scan(opts...).ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("iceberg-go %s scan of %s: %v", mode, q.Name, err)
		}
		ms := float64(time.Since(t0).Microseconds()) / 1000
		r.Bytes, r.Rows = sent()-before, int(at.NumRows())
		at.Release()
		if i > 0 {
			r.WallMs = append(r.WallMs, ms)
		}
	}
	return r
}

func pyiceberg() string {
	root, err := harness.RepoRoot()
	if err != nil {
		return ""
	}
	py := filepath.Join(root, ".tools", "pyiceberg", "bin", "python")
	if out, err := exec.Command(py, "-c", "import pyiceberg; print(pyiceberg.__version__)").Output(); err != nil || strings.TrimSpace(string(out)) == "" {
		return ""
	}
	return py
}

// pyIceberg measures PyIceberg's scan (a subprocess per run; the time is
// to_arrow's, measured inside it) in mode (its scan-planning-mode).
func pyIceberg(t *testing.T, c *harness.Cluster, py, tableName string, q query, mode string, sent func() int64) Result {
	root, _ := harness.RepoRoot()
	script := filepath.Join(root, "test", "clients", "pyiceberg", "scan.py")
	run := func(extra ...string) (files, rows int, ms float64) {
		args := []string{script, "--uri", c.IcebergURI(), "--warehouse", c.Warehouse, "--s3", c.S3Endpoint(), "--table", tableName,
			"--mode", mode, "--select", strings.Join(selected, ",")}
		if q.Py != "" {
			args = append(args, "--filter", q.Py)
		}
		out, err := exec.Command(py, append(args, extra...)...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("PyIceberg %s %s: %v\n%s", mode, q.Name, err, stderr)
		}
		var res struct {
			Files int     `json:"files"`
			IDs   []int64 `json:"ids"`
			MS    float64 `json:"ms"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("PyIceberg printed %q: %v", out, err)
		}
		return res.Files, len(res.IDs), res.MS
	}
	r := Result{Client: "PyIceberg", Query: q.Name, Mode: mode}
	r.Files, _, _ = run()
	for i := 0; i < 4; i++ {
		before := sent()
		_, n, ms := run("--read-only")
		r.Bytes, r.Rows = sent()-before, n
		if i > 0 {
			r.WallMs = append(r.WallMs, ms)
		}
	}
	return r
}

// remotePlanLatency times the whole remote planning protocol with
// iceberg-go's low-level client, warm: plan, then every plan task fetched
// GOMAXPROCS at a time (as iceberg-go's PlanFiles fetches them), each
// answer decoded into iceberg-go's wire types. warm runs once the warm-ups
// are done.
func remotePlanLatency(t *testing.T, cat *rest.Catalog, ident table.Identifier, tbl *table.Table, q query, serverPID int, warm func()) PlanLatency {
	ctx := context.Background()
	req := rest.PlanTableScanRequest{Select: selected}
	if _, ok := q.Iceberg.(iceberg.AlwaysTrue); !ok {
		bound, err := iceberg.BindExpr(tbl.Schema(), q.Iceberg, true)
		if err != nil {
			t.Fatal(err)
		}
		if req.Filter, err = json.Marshal(bound); err != nil {
			t.Fatal(err)
		}
	}
	return timeRuns(t, q.Name, "remote", 3, 20, serverPID, warm, func() int {
		resp, err := cat.PlanTableScan(ctx, ident, req)
		if err != nil {
			t.Fatal(err)
		}
		tasks := resp.ScanTasks
		if resp.Status == rest.PlanStatusSubmitted {
			done, err := cat.WaitForPlan(ctx, ident, *resp.PlanID, rest.WaitForPlanOptions{MinDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			tasks = done.ScanTasks
		}
		counts := make([]int, len(tasks.PlanTasks))
		var g errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		for i, pt := range tasks.PlanTasks {
			g.Go(func() error {
				page, err := cat.FetchScanTasks(ctx, ident, rest.FetchScanTasksRequest{PlanTask: pt})
				counts[i] = len(page.FileScanTasks)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		n := len(tasks.FileScanTasks)
		for _, c := range counts {
			n += c
		}
		if resp.PlanID != nil && len(tasks.PlanTasks) > 0 {
			_ = cat.CancelPlanning(ctx, ident, *resp.PlanID)
		}
		return n
	})
}

// remotePlanFilesLatency times iceberg-go's PlanFiles with remote planning:
// the protocol as table.Scan drives it (plan, every plan task fetched
// concurrently, the tasks decoded, the plan released).
func remotePlanFilesLatency(t *testing.T, tbl *table.Table, q query, serverPID int) PlanLatency {
	ctx := context.Background()
	return timeRuns(t, q.Name, "remote PlanFiles", 3, 10, serverPID, nil, func() int {
		scan := tbl.Scan(table.WithRowFilter(q.Iceberg), table.WithSelectedFields(selected...), table.WithScanPlanningMode(table.ScanPlanningRemote))
		defer scan.Close()
		tasks, err := scan.PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks)
	})
}

// localPlanLatency times iceberg-go's own PlanFiles (manifests through S3).
func localPlanLatency(t *testing.T, tbl *table.Table, q query, serverPID int) PlanLatency {
	ctx := context.Background()
	return timeRuns(t, q.Name, "local", 3, 10, serverPID, nil, func() int {
		tasks, err := tbl.Scan(table.WithRowFilter(q.Iceberg), table.WithSelectedFields(selected...)).PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks)
	})
}

// timeRuns runs once warmups times, calls warm (if any), then times runs
// more: wall per run, and the CPU this process (the client) and the
// server's process used over the timed runs, per run — CPU time is what
// the 2-core machine's other jobs disturb least.
func timeRuns(t *testing.T, name, mode string, warmups, runs, serverPID int, warm func(), once func() (files int)) PlanLatency {
	files := 0
	for i := 0; i < warmups; i++ {
		files = once()
	}
	if warm != nil {
		warm()
	}
	lat := make([]time.Duration, 0, runs)
	client0, server0 := processCPU(0), processCPU(serverPID)
	for i := 0; i < runs; i++ {
		t0 := time.Now()
		files = once()
		lat = append(lat, time.Since(t0))
	}
	client, server := processCPU(0)-client0, processCPU(serverPID)-server0
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return PlanLatency{Query: name, Mode: mode, Files: files, Runs: runs, P50Ms: ms(lat[len(lat)/2]), P99Ms: ms(lat[len(lat)-1]),
		ClientCPUMs: ms(client) / float64(runs), ServerCPUMs: ms(server) / float64(runs)}
}

// processCPU is the user+system CPU time of process pid (0: this one), from
// /proc/<pid>/stat.
func processCPU(pid int) time.Duration {
	path := "/proc/self/stat"
	if pid > 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// the fields after the command (which may hold spaces) in parentheses
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// Linux for every architecture Go supports).
const clockTicks = 100

func write(t *testing.T, rows int64, bigFiles, manyFiles int, results []Result, lat []PlanLatency) {
	b, _ := json.MarshalIndent(struct {
		Results []Result
		Latency []PlanLatency
	}{results, lat}, "", "  ")
	if err := os.WriteFile(filepath.Join("..", "results", "restplan.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	var md strings.Builder
	fmt.Fprintf(&md, "# Server-side scan planning (Iceberg REST) against each client's own planning\n\n"+
		"`BENCH=restplan ./scripts/bench.sh`, %s, %d cores, load average at the end %s. `weed mini -pushdown`; `bench.events`: %d demo rows in 8 files "+
		"written with `-indexed none`, btree on `id`, bitmap on `tenant_id`; `bench.%s` (the point lookup on many files): the same rows in %d files, btree on `id`; selected `%s`. Bytes: what the S3 gateway sent for one read "+
		"(manifests and data files: what the client read); wall: three timed reads after one warm-up (iceberg-go in this process; PyIceberg's "+
		"`to_arrow` timed inside its process). Remote = the REST catalog's scan planning (lakeweed's planner), local = the client reads the manifests.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), strings.TrimSpace(string(load)), rows, manyName, manyFiles, strings.Join(selected, ", "))
	fmt.Fprintf(&md, "| client | query | rows | files remote | files local | bytes remote | bytes local | fewer bytes | wall ms remote | wall ms local | faster |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |\n")
	byKey := map[string]Result{}
	for _, r := range results {
		byKey[r.Client+"|"+r.Table+"|"+r.Query+"|"+r.Mode] = r
	}
	for _, r := range results {
		if r.Mode != string(table.ScanPlanningRemote) && r.Mode != "server" {
			continue
		}
		localMode := map[string]string{"remote": "local", "server": "client"}[r.Mode]
		l := byKey[r.Client+"|"+r.Table+"|"+r.Query+"|"+localMode]
		name := r.Query
		if r.Table != "" {
			name += ", `" + r.Table + "`"
		}
		fmt.Fprintf(&md, "| %s | %s | %d | %d | %d | %d | %d | %.1f× | %s | %s | %.2f× |\n", r.Client, name, r.Rows, r.Files, l.Files, r.Bytes, l.Bytes,
			float64(l.Bytes)/float64(max(1, r.Bytes)), runs(r.WallMs), runs(l.WallMs), median(l.WallMs)/median(r.WallMs))
	}
	fmt.Fprintf(&md, "\nPlan latency, `bench.events10k` (%d files, 1,000,000 rows, `-indexed none`), warm: remote = iceberg-go's low-level client through "+
		"the whole protocol (plan, every plan task; 20 runs after 3 warm-ups), local = iceberg-go's `PlanFiles` (10 runs after 3). Target: remote p50 ≤ 100 ms.\n\n", bigFiles)
	fmt.Fprintf(&md, "| query | mode | files planned | p50 ms | p99 ms |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, l := range lat {
		fmt.Fprintf(&md, "| %s | %s | %d | %.1f | %.1f |\n", l.Query, l.Mode, l.Files, l.P50Ms, l.P99Ms)
	}
	if err := os.WriteFile(filepath.Join("..", "results", "restplan.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runs(ms []float64) string {
	var s []string
	for _, m := range ms {
		s = append(s, strconv.FormatFloat(m, 'f', 1, 64))
	}
	return strings.Join(s, " / ")
}
