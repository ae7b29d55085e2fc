package vectorbench

import (
	"os"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
)

// TestWarmVectorPlanProfile writes a CPU profile of the cluster while it
// answers warm ivf plans (LAKEWEED_BENCH_PROFILE=out.pprof):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_PROFILE=/tmp/plan.pprof go test -run TestWarmVectorPlanProfile -v ./bench/vectorbench/
func TestWarmVectorPlanProfile(t *testing.T) {
	c, port, out := benchutil.ProfiledMini(t)
	ds := demoDataset(envInt("LAKEWEED_BENCH_DEMO_ROWS", 100000), 4)
	ds.load(t, c)
	ds.readRows(t, c)
	e := c.Endpoints()
	if o, eo, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3,
		"-warehouse", e.Warehouse, "-table", ds.table, "-column", "embedding", "-kind", "ivf", "-wait"); err != nil {
		t.Fatalf("index create: %v\n%s%s", err, o, eo)
	}
	pred := os.Getenv("LAKEWEED_BENCH_PROFILE_PRED")
	for _, q := range ds.queries {
		plan(t, c, ds.table, q, pred)
	}
	done := make(chan []float64)
	go func() {
		var lat []float64
		for t0 := time.Now(); time.Since(t0) < 12*time.Second; {
			for _, q := range ds.queries {
				_, d := plan(t, c, ds.table, q, pred)
				lat = append(lat, ms(d))
			}
		}
		done <- lat
	}()
	b := benchutil.ClusterCPUProfile(t, port, 10)
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lat := <-done
	t.Logf("%d warm plans, p50 %.2f ms; profile in %s", len(lat), median(lat), out)
}
