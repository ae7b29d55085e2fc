package integration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// TestConnectorWarmLatency measures the connector's warm latency on a
// 1M-row demo table (medians of three series) and writes a CPU profile of
// 30 runs of each query to $LAKEWEED_PROFILE_DIR, with the cluster's CPU
// profile (plan, reads) of the query run for 3 s. A measurement, not a
// check: it runs only with LAKEWEED_BENCH set.
func TestConnectorWarmLatency(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("measurement: run with LAKEWEED_BENCH=1 (LAKEWEED_BENCH_ROWS, LAKEWEED_BENCH_INDEXED, LAKEWEED_BENCH_Q, LAKEWEED_PROFILE_DIR)")
	}
	rows := int64(1_000_000)
	if v := os.Getenv("LAKEWEED_BENCH_ROWS"); v != "" {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	dir := os.Getenv("LAKEWEED_PROFILE_DIR")
	var opts harness.MiniOptions
	debugPort := 0
	if dir != "" { // the cluster's profiles too, from its debug listener
		debugPort = harness.FreePorts(t, 1)[0]
		opts.ExtraArgs = []string{"-debug", "-debug.port=" + strconv.Itoa(debugPort)}
	}
	c := harness.StartMini(t, opts)
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Indexed = rows, demo.IndexedAll
	if v := os.Getenv("LAKEWEED_BENCH_INDEXED"); v != "" {
		ix, err := demo.ParseIndexed(v)
		if err != nil {
			t.Fatal(err)
		}
		spec.Indexed = ix
	}
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "speed.all", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	// LAKEWEED_BENCH_READ: read paths to measure in turn (auto, volume,
	// s3; comma-separated); LAKEWEED_BENCH_RANGE_CACHE=off: no range cache,
	// so every warm run reads its bytes (along that path).
	var paths []connector.ReadPath
	for _, v := range strings.Split(cmp.Or(os.Getenv("LAKEWEED_BENCH_READ"), "auto"), ",") {
		rp, err := connector.ParseReadPath(v)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, rp)
	}
	var rangeCache int64
	if os.Getenv("LAKEWEED_BENCH_RANGE_CACHE") == "off" {
		rangeCache = -1
	}
	var conn *connector.Connector
	queries := []struct {
		name  string
		where string
		sel   []string
		limit int64
	}{
		{"point lookup id", fmt.Sprintf("id = %d", rows/3), []string{"id", "tenant_id", "status", "message"}, 0},
		{"1% ts range", onePercentOfTs(spec, rows), []string{"id", "ts", "message"}, 0},
		{"tenant_id equality", "tenant_id = 'tenant-042'", []string{"id", "tenant_id", "status"}, 0},
		{"status equality", "status = 'error'", []string{"id", "status"}, 0},
		{"full scan of two columns", "", []string{"id", "ts"}, 0},
		{"LIMIT 10 of status equality", "status = 'error'", []string{"id", "status"}, 10},
	}
	var last connector.Stats
	run := func(where string, sel []string, limit int64) (int64, time.Duration) {
		t0 := time.Now()
		res, err := conn.Query(ctx, connector.Query{Table: "speed.all", Where: where, Select: sel, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if !res.Stats.Pushdown {
			t.Fatalf("%s: not pushed down: %s", where, res.Stats.FallbackReason)
		}
		last = res.Stats
		return res.NumRows(), time.Since(t0)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// LAKEWEED_BENCH_Q: only the queries whose names hold one of these
	// (comma-separated), e.g. "point,LIMIT"
	if only := os.Getenv("LAKEWEED_BENCH_Q"); only != "" {
		keep := queries[:0]
		for _, q := range queries {
			for _, o := range strings.Split(only, ",") {
				if strings.Contains(q.name, o) {
					keep = append(keep, q)
					break
				}
			}
		}
		queries = keep
	}
	measure := func() {
		for _, q := range queries {
			n, cold := run(q.where, q.sel, q.limit)
			var medians []string
			cpu0, runs := cpu(), 0
			for series := 0; series < 3; series++ {
				var ds []float64
				for i := 0; i < 11; i++ {
					_, d := run(q.where, q.sel, q.limit)
					ds = append(ds, float64(d.Microseconds())/1000)
					runs++
				}
				sort.Float64s(ds)
				medians = append(medians, fmt.Sprintf("%.1f", ds[len(ds)/2]))
			}
			t.Logf("%-20s last warm run: plan %d ms, read %d ms, %d bytes read (%d volume, %d S3), %d ranges, %d row groups", q.name, last.PlanMs, last.ReadMs, last.BytesRead, last.BytesVolume, last.BytesS3, last.Ranges, last.RowGroups)
			t.Logf("%-20s rows %7d cold %7.1f ms warm medians %v ms, CPU %.1f ms a query", q.name, n, float64(cold.Microseconds())/1000, medians,
				float64((cpu()-cpu0).Microseconds())/1000/float64(runs))
		}
	}
	for _, rp := range paths {
		var err error
		if conn, err = connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true, Read: rp, RangeCacheBytes: rangeCache}); err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		t.Logf("-read %s, range cache %s", rp, cmp.Or(os.Getenv("LAKEWEED_BENCH_RANGE_CACHE"), "on"))
		measure()
	}
	if dir == "" {
		return
	}
	// profiles of the last read path measured: the connector's (cpu-*) and
	// the cluster's (cluster-*: catalog and volume services) over the same
	// 30 runs
	for _, q := range queries {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%s.pprof", strings.Fields(q.name)[0])))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		name := strings.Fields(q.name)[0]
		clusterDone := make(chan struct{})
		go func() {
			defer close(clusterDone)
			writeClusterProfile(t, debugPort, filepath.Join(dir, "cluster-"+name+".pprof"))
		}()
		time.Sleep(100 * time.Millisecond) // the cluster's profile has started
		t0, n := time.Now(), 0
		for ; n < 30 || !closed(clusterDone); n++ { // 30 runs at least, and while the cluster's profile runs
			run(q.where, q.sel, q.limit)
		}
		pprof.StopCPUProfile()
		f.Close()
		t.Logf("profile %s: %d runs, %.1f ms a query", q.name, n, float64(time.Since(t0).Microseconds())/1000/float64(n))
	}
	// allocations of every run above (go tool pprof -sample_index=alloc_space)
	f, err := os.Create(filepath.Join(dir, "allocs.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeClusterProfile writes a 2-second CPU profile of the cluster from its
// debug listener to path; a failure is logged, not fatal (a measurement).
func writeClusterProfile(t *testing.T, port int, path string) {
	b, err := benchutil.FetchCPUProfile(port, 2)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Logf("cluster profile: %v", err)
	}
}

// onePercentOfTs is the peer benchmark's 1% range of the demo's sorted
// ts: the rows from the middle of the table on, one hundredth of them.
func onePercentOfTs(spec demo.Spec, rows int64) string {
	ts := func(g int64) string {
		return "TIMESTAMP '" + spec.TimestampOf(g).UTC().Format("2006-01-02 15:04:05.000000") + "'"
	}
	return fmt.Sprintf("ts >= %s AND ts < %s", ts(rows/2), ts(rows/2+rows/100))
}
