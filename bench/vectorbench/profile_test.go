package vectorbench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// TestWarmVectorPlanProfile writes a CPU profile of the cluster while it
// answers warm ivf plans (LAKEWEED_BENCH_PROFILE=out.pprof):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_PROFILE=/tmp/plan.pprof go test -run TestWarmVectorPlanProfile -v ./bench/vectorbench/
func TestWarmVectorPlanProfile(t *testing.T) {
	out := os.Getenv("LAKEWEED_BENCH_PROFILE")
	if os.Getenv("LAKEWEED_BENCH") == "" || out == "" {
		t.Skip("profile: set LAKEWEED_BENCH=1 and LAKEWEED_BENCH_PROFILE")
	}
	port := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-debug", "-debug.port=" + strconv.Itoa(port)}})
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
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=10", port))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lat := <-done
	t.Logf("%d warm plans, p50 %.2f ms; profile in %s", len(lat), median(lat), out)
}
