package kindsbench

import (
	"context"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// TestWarmArrayContainsProfile writes CPU profiles of the connector (this
// process, <out>.connector) and of the cluster (<out>.cluster) while warm
// array_contains(tags, 'gpu') queries run with the kinds benchmark's side
// indexes and page indexes (LAKEWEED_BENCH_PROFILE=out):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_ROWS=500000 LAKEWEED_BENCH_PROFILE=/tmp/ac go test -run TestWarmArrayContainsProfile -v ./bench/kindsbench/
func TestWarmArrayContainsProfile(t *testing.T) {
	c, port, out := benchutil.ProfiledMini(t)
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	ctx := context.Background()
	const name = "bench.kinds_profile"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: kindq.Spec(rows)}); err != nil {
		t.Fatal(err)
	}
	kindq.CreateIndexes(t, c, name, [2]string{"tags", "label_list"})
	kindq.CreateIndexes(t, c, name, kindq.PageIndexes()...)
	q := kindq.Queries[1] // array_contains(tags, 'gpu')
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run := func() (kindq.Answer, connector.Stats, time.Duration) {
		t0 := time.Now()
		a, st, err := kindq.ConnectorQuery(ctx, conn, name, q)
		if err != nil {
			t.Fatal(err)
		}
		return a, st, time.Since(t0)
	}
	a, st, _ := run()
	run()
	f, err := os.Create(out + ".connector")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	done := make(chan []float64)
	go func() {
		var lat []float64
		for t0 := time.Now(); time.Since(t0) < 12*time.Second; {
			_, _, d := run()
			lat = append(lat, float64(d.Microseconds())/1000)
		}
		done <- lat
	}()
	b := benchutil.ClusterCPUProfile(t, port, 10)
	lat := <-done
	pprof.StopCPUProfile()
	if err := os.WriteFile(out+".cluster", b, 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	t.Logf("%d rows, %d bytes planned, %d read; %d warm queries, p50 %.1f ms; profiles in %s.connector and %s.cluster",
		a.Rows, st.BytesPlanned, st.BytesRead, len(lat), lat[len(lat)/2], out, out)
}
