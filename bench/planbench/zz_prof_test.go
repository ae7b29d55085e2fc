package planbench

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

func TestZZProfile10k(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "bench.events10k", Spec: specOf(1_000_000, 10_000)}); err != nil {
		t.Fatal(err)
	}
	svc := newService(c)
	for _, q := range queries(1_000_000) {
		if q.Name != "no predicate" && q.Name != "point lookup id" && q.Name != "status equality" {
			continue
		}
		req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), "bench.events10k", 0, q.Where, projection)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := svc.Plan(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		f, _ := os.Create("/tmp/p10k-" + q.Name[:5] + ".pprof")
		pprof.StartCPUProfile(f)
		var ds []time.Duration
		for i := 0; i < 30; i++ {
			t0 := time.Now()
			if _, err := svc.Plan(ctx, req); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		pprof.StopCPUProfile()
		f.Close()
		t.Logf("%s: p50 %.1f ms", q.Name, percentile(ds, 0.5))
	}
}
