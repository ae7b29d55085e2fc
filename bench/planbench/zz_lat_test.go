package planbench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

func TestZZLatency(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Indexed = 1_000_000, demo.IndexedAll
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "lat.e", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"id = 333333", "id = 1234", "tenant_id = 'tenant-042'"} {
		q := connector.Query{Table: "lat.e", Where: w, Select: []string{"id", "tenant_id", "status", "message"}}
		for i := 0; i < 3; i++ {
			conn.Query(ctx, q)
		}
		var ds []time.Duration
		var last connector.Stats
		for i := 0; i < 15; i++ {
			t0 := time.Now()
			res, err := conn.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			last = res.Stats
			res.Release()
		}
		t.Logf("%s: p50 %.1f ms; files %d rgs %d rows %d planned %d plan %dms read %dms", w, percentile(ds, 0.5), last.Files, last.RowGroups, last.Rows, last.BytesPlanned, last.PlanMs, last.ReadMs)
	}
}
