package vectorbench

import (
	"context"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
)

// TestWarmVectorPlanProfile writes a CPU profile of the cluster while it
// answers warm ivf plans (LAKEWEED_BENCH_PROFILE=out.pprof):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_PROFILE=/tmp/plan.pprof go test -run TestWarmVectorPlanProfile -v ./bench/vectorbench/
//
// LAKEWEED_BENCH_PROFILE_PARTITIONED=1 profiles the tenant-partitioned
// demo under its σ = 0.2 filter (LAKEWEED_BENCH_PROFILE_PRED overrides
// the predicate) through the connector: it logs the connector's brute
// force and ivf figures under that filter, and writes the test process's
// own CPU profile (the connector) to <out>.connector;
// LAKEWEED_BENCH_PROFILE_FASHION=1 does the same on the label-partitioned
// Fashion-MNIST table under label IN (3, 7). LAKEWEED_BENCH_PROFILE_PQ=1
// also builds ivf_pq, which the plans then search. The connector figures
// follow an untimed pass of the brute force and one untimed index query
// with another vector and k = 1000 (LAKEWEED_BENCH_PROFILE_COLD=1: none,
// the index's first pass then decodes its winners' projected row groups),
// the brute force timed last.
func TestWarmVectorPlanProfile(t *testing.T) {
	out := os.Getenv("LAKEWEED_BENCH_PROFILE")
	if os.Getenv("LAKEWEED_BENCH") == "" || out == "" {
		t.Skip("profile: set LAKEWEED_BENCH=1 and LAKEWEED_BENCH_PROFILE")
	}
	port := harness.FreePorts(t, 1)[0]
	// LAKEWEED_BENCH_PROFILE_DIR keeps the cluster's data between runs:
	// a table already there is not loaded again (compare code changes on
	// the same data).
	dir := os.Getenv("LAKEWEED_BENCH_PROFILE_DIR")
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := harness.StartMini(t, harness.MiniOptions{Dir: dir, ExtraArgs: []string{"-debug", "-debug.port=" + strconv.Itoa(port)}})
	fashion := os.Getenv("LAKEWEED_BENCH_PROFILE_FASHION") != ""
	partitioned := fashion || os.Getenv("LAKEWEED_BENCH_PROFILE_PARTITIONED") != ""
	ds := demoDataset(envInt("LAKEWEED_BENCH_DEMO_ROWS", 100000), 4)
	var f filter
	switch {
	case fashion:
		ds = fashionDataset(t, envInt("LAKEWEED_BENCH_FASHION_ROWS", 60000), 10, true)
		f = ds.filters[len(ds.filters)-1]
	case partitioned:
		ds = demoPartitionedDataset(envInt("LAKEWEED_BENCH_DEMO_ROWS", 1000000))
		f = ds.filters[1]
	}
	if p := os.Getenv("LAKEWEED_BENCH_PROFILE_PRED"); p != "" {
		f = filter{name: "LAKEWEED_BENCH_PROFILE_PRED", pred: p}
	}
	ns, tn, _ := strings.Cut(ds.table, ".")
	if ok, err := c.Iceberg(t).CheckTableExists(context.Background(), table.Identifier{ns, tn}); err != nil || !ok {
		ds.load(t, c)
		createIVF(t, c, ds)
	}
	if os.Getenv("LAKEWEED_BENCH_PROFILE_PQ") != "" {
		// ivf_pq beside ivf: plans search ivf_pq (an index already
		// there is rebuilt, which is cheap next to loading the table)
		createIndex(t, c, ds, "ivf_pq")
	}
	ds.readRows(t, c)
	for _, q := range ds.queries {
		plan(t, c, ds.table, q, f.pred)
	}
	if partitioned && f.where != "" {
		// LAKEWEED_BENCH_PROFILE_NPROBE: comma-separated nprobe values
		// measured after the default (0: the default again).
		nprobes := []int{0}
		for _, v := range strings.Split(os.Getenv("LAKEWEED_BENCH_PROFILE_NPROBE"), ",") {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				nprobes = append(nprobes, n)
			}
		}
		// Untimed passes first (LAKEWEED_BENCH_PROFILE_COLD=1: none): the
		// first connector pass of the index decodes the row groups holding
		// its winners' projected columns (about a millisecond a file, once)
		// that every later pass finds cached — it charged the default
		// nprobe, measured first, 1–2 ms more than nprobe 64.
		if os.Getenv("LAKEWEED_BENCH_PROFILE_COLD") == "" {
			connectorLatency(t, c, ds, f, len(ds.queries), true, 0)
			warmProjectedRowGroups(t, c, ds, f)
		}
		var bare []float64
		for _, q := range ds.queries {
			_, d := plan(t, c, ds.table, q, f.pred)
			bare = append(bare, ms(d))
		}
		t.Logf("%s: bare Plan RPC (no projection) warm p50 %.2f ms", f.name, median(bare))
		// the brute force timed last: no index pass right after its reads
		ivfs := make([]connFigures, len(nprobes))
		for i, np := range nprobes {
			ivfs[i] = connectorLatency(t, c, ds, f, len(ds.queries), false, np)
		}
		exact := connectorLatency(t, c, ds, f, len(ds.queries), true, 0)
		for i, np := range nprobes {
			ivf := ivfs[i]
			t.Logf("%s nprobe %d: connector exact %.1f ms (%.0f scored), connector ivf %.2f ms (%.0f scored + %.0f PQ, %.1f files by index, %.1f exactly, %.1f pruned whole, at most %.0f lists probed, recall %.3f): %.0f×",
				f.name, np, exact.warm, exact.scored, ivf.warm, ivf.scored, ivf.approx, ivf.byIndex, ivf.exact, ivf.filesPruned, ivf.maxProbed, ivf.recall, exact.warm/ivf.warm)
		}
	}
	done := make(chan []float64)
	go func() {
		var lat []float64
		for t0 := time.Now(); time.Since(t0) < 12*time.Second; {
			if partitioned && f.where != "" {
				// LAKEWEED_BENCH_PROFILE_EXACT=1: the connector's brute force
				// LAKEWEED_BENCH_PROFILE_LOOP_NPROBE: the nprobe profiled
				// (default: the index's default)
				lat = append(lat, connectorLatency(t, c, ds, f, len(ds.queries), os.Getenv("LAKEWEED_BENCH_PROFILE_EXACT") != "", envInt("LAKEWEED_BENCH_PROFILE_LOOP_NPROBE", 0)).warm)
				continue
			}
			for _, q := range ds.queries {
				_, d := plan(t, c, ds.table, q, f.pred)
				lat = append(lat, ms(d))
			}
		}
		done <- lat
	}()
	var local *os.File
	if partitioned {
		var err error
		if local, err = os.Create(out + ".connector"); err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(local); err != nil {
			t.Fatal(err)
		}
	}
	b := benchutil.ClusterCPUProfile(t, port, 10)
	if local != nil {
		pprof.StopCPUProfile()
		local.Close()
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lat := <-done
	t.Logf("%d warm queries, p50 %.2f ms; profile in %s", len(lat), median(lat), out)
}
