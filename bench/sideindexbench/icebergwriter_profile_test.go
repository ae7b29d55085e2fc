package sideindexbench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// TestIcebergGoWarmQueryProfile writes CPU profiles of the connector (in
// this process) answering the warm point lookup and 100-id IN of the
// iceberg-go-writer table with a btree on id and side page indexes on the
// projection (LAKEWEED_BENCH_PROFILE=prefix: prefix.point.pprof,
// prefix.in.pprof, and the cluster's over the same seconds beside them as
// prefix.point.cluster.pprof, prefix.in.cluster.pprof; LAKEWEED_BENCH_ROWS:
// table size, default 1,000,000):
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_PROFILE=/tmp/igo go test -run TestIcebergGoWarmQueryProfile -v ./bench/sideindexbench/
func TestIcebergGoWarmQueryProfile(t *testing.T) {
	c, port, out := benchutil.ProfiledMini(t)
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	ctx := context.Background()
	const name = "bench.igo"
	benchutil.CreateIcebergGoTable(t, c, "bench", "igo", rows)
	kindq.CreateIndexes(t, c, name, [2]string{"id", "btree"})
	for _, col := range strings.Split(igoProjection, ",") {
		kindq.CreateIndexes(t, c, name, [2]string{col, "page_index"})
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	names, wheres, ids := benchutil.IcebergGoQueries(rows)
	files := []string{out + ".point.pprof", out + ".in.pprof"}
	for i := range names {
		q := connector.Query{Table: name, Where: wheres[i], Select: strings.Split(igoProjection, ",")}
		run := func() {
			res, err := conn.Query(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", names[i], err)
			}
			var n int64
			for _, r := range res.Records {
				n += r.NumRows()
			}
			res.Release()
			if n != int64(len(ids[i])) {
				t.Fatalf("%s: %d rows, want %d", names[i], n, len(ids[i]))
			}
		}
		for w := 0; w < 3; w++ {
			run()
		}
		clusterFile := strings.TrimSuffix(files[i], ".pprof") + ".cluster.pprof"
		w := benchutil.ProfileWarm(t, port, c.Proc.Cmd.Process.Pid, files[i], clusterFile, run)
		t.Logf("%s: %d warm queries, median %.1f ms, CPU a query %.2f ms connector + %.2f ms cluster (load %s); profiles %s (connector), %s (cluster)",
			names[i], len(w.Latencies), w.P50(), w.SelfCPUMs, w.ClusterCPU, benchutil.LoadAverage(), files[i], clusterFile)
	}
}
