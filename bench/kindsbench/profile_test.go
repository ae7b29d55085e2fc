package kindsbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// TestWarmKindsProfile writes, per query of the kinds benchmark
// (kindq.Queries; LAKEWEED_BENCH_QUERY=i only the i-th), CPU profiles of
// the connector (this process, <out>.<i>.connector) and of the cluster
// (<out>.<i>.cluster) while warm queries run with the benchmark's side
// indexes and page indexes, and logs the CPU a query takes (this process
// and the cluster's, summed over the profiled queries: load on a shared
// machine stretches latency, less so CPU):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_ROWS=500000 LAKEWEED_BENCH_PROFILE=/tmp/kinds go test -run TestWarmKindsProfile -v ./bench/kindsbench/
func TestWarmKindsProfile(t *testing.T) {
	c, port, out := benchutil.ProfiledMini(t)
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	only := -1
	if v, err := strconv.Atoi(os.Getenv("LAKEWEED_BENCH_QUERY")); err == nil {
		only = v
	}
	ctx := context.Background()
	const name = "bench.kinds_profile"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: kindq.Spec(rows)}); err != nil {
		t.Fatal(err)
	}
	// the side indexes each query uses (kindq.Indexes)
	uses := [][][2]string{{{"message", "ngram"}}, {{"tags", "label_list"}}, {{"tenant_id", "bitmap"}, {"status", "bitmap"}}}
	var indexes [][2]string
	for i := range kindq.Queries {
		if only < 0 || only == i {
			indexes = append(indexes, uses[i]...)
		}
	}
	kindq.CreateIndexes(t, c, name, indexes...)
	kindq.CreateIndexes(t, c, name, kindq.PageIndexes()...)
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, q := range kindq.Queries {
		if only >= 0 && only != i {
			continue
		}
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
		w := benchutil.ProfileWarm(t, port, c.Proc.Cmd.Process.Pid, fmt.Sprintf("%s.%d.connector", out, i), fmt.Sprintf("%s.%d.cluster", out, i), func() { run() })
		t.Logf("%s: %d rows, %d bytes planned, %d read; %d warm queries, p50 %.1f ms; CPU a query %.1f ms connector + %.1f ms cluster (load %s); profiles %s.%d.*",
			q.Name, a.Rows, st.BytesPlanned, st.BytesRead, len(w.Latencies), w.P50(), w.SelfCPUMs, w.ClusterCPU, benchutil.LoadAverage(), out, i)
	}
}
