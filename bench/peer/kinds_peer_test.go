package peer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// TestKindsPeerBenchmark puts the side-index kinds issue's three queries
// (kindq.Queries) to the connector with bitmap, ngram and
// label_list side indexes (and side page indexes, kindq.PageIndexes) and
// to DuckDB reading the same files through
// `weed mount`, on the benchmark demo table (kindq.Spec): rows must
// agree; bytes are what the S3 gateway sent (connector) and what weed
// mount read (DuckDB) for one cold query; warm latency is the median of
// 11 queries per run, 3 runs. Results: bench/results/kinds_peer.md.
func TestKindsPeerBenchmark(t *testing.T) {
	requireBenchAsRoot(t, "benchmark: run with `BENCH=kinds ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	rows := int64(envInt("LAKEWEED_BENCH_ROWS", 1_000_000))
	ctx := context.Background()
	metricsPort := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-metricsPort=" + strconv.Itoa(metricsPort)}})
	const name = "peer.kinds"
	spec := kindq.Spec(rows)
	res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	kindq.CreateIndexes(t, c, name, append(kindq.Indexes, kindq.PageIndexes()...)...)
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	dir, mount := benchutil.MountTableData(t, c, res.Location, "mnt")

	type figures struct {
		answer kindq.Answer
		bytes  int64
		warm   []float64
		// CPU a warm query, ms: this process's (the reader) and the
		// servers' (the cluster's, and weed mount's for DuckDB)
		cpuReader, cpuServers float64
	}
	// fn returns the answer and the bytes read past counter (the
	// connector's from volume pushdown services)
	measure := func(counter func() int64, servers func() time.Duration, fn func() (kindq.Answer, int64, error)) figures {
		var f figures
		before := counter()
		a, extra, err := fn()
		if err != nil {
			t.Fatal(err)
		}
		f.answer, f.bytes = a, counter()-before+extra
		runtime.GC() // the garbage of earlier readers is not this one's CPU
		self0, srv0 := benchutil.SelfCPU(), servers()
		const runs, queries = 3, 11
		for r := 0; r < runs; r++ {
			var d []float64
			for i := 0; i < queries; i++ {
				t0 := time.Now()
				if _, _, err := fn(); err != nil {
					t.Fatal(err)
				}
				d = append(d, float64(time.Since(t0).Microseconds())/1000)
			}
			slices.Sort(d)
			f.warm = append(f.warm, d[len(d)/2])
		}
		slices.Sort(f.warm)
		f.cpuReader = float64((benchutil.SelfCPU() - self0).Microseconds()) / 1000 / (runs * queries)
		f.cpuServers = float64((servers() - srv0).Microseconds()) / 1000 / (runs * queries)
		return f
	}
	clusterCPU := func() time.Duration { return benchutil.ProcCPU(c.Proc.Cmd.Process.Pid) }
	s3Sent := func() int64 {
		return scrape(t, metricsPort, `SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket="warehouse"}`)
	}
	mountRead := func() int64 { return procIO(mount.Cmd.Process.Pid, "rchar") }
	var md strings.Builder
	fmt.Fprintf(&md, "# Side-index kinds against DuckDB over weed mount\n\n`BENCH=kinds ./scripts/bench.sh` (bench/peer TestKindsPeerBenchmark) on the 2-core development machine (shared, noisy): "+
		"%d demo rows in 8 files written with `-indexed none` %s; the connector (page-aware, side indexes bitmap(tenant_id), bitmap(status), ngram(message), label_list(tags) and page_index on %s) "+
		"and DuckDB (duckdb-go, `read_parquet` over `weed mount`). Bytes: one cold query (the first after the mount for DuckDB: weed mount's rchar; S3 gateway sent bytes and volume pushdown services' for the connector). "+
		"Warm: median of 11 queries per run, 3 runs (spread min–max). CPU: per warm query, the reader's (this process: the connector, or the embedded DuckDB) + the servers' (the cluster's, and weed mount's for DuckDB); load average %s at the start.\n\n"+
		"| query | rows | connector bytes | DuckDB bytes | connector warm ms (spread) | DuckDB warm ms (spread) | DuckDB / connector warm | connector CPU ms | DuckDB CPU ms |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", rows, kindq.LayoutNote, strings.Join(kindq.PageIndexColumns, ", "), benchutil.LoadAverage())
	for _, q := range kindq.Queries {
		a := measure(s3Sent, clusterCPU, func() (kindq.Answer, int64, error) {
			ans, st, err := kindq.ConnectorQuery(ctx, conn, name, q)
			return ans, st.BytesVolume, err
		})
		d := measure(mountRead, func() time.Duration { return clusterCPU() + benchutil.ProcCPU(mount.Cmd.Process.Pid) }, func() (kindq.Answer, int64, error) {
			n, sum, err := duckScan(dir, query{sel: q.Select, duckdb: q.Duck})
			return kindq.Answer{Rows: n, IDSum: sum}, 0, err
		})
		if a.answer != d.answer {
			t.Errorf("%s: connector %+v, DuckDB %+v", q.Name, a.answer, d.answer)
		}
		fmt.Fprintf(&md, "| `%s` | %d | %d | %d | %.1f (%.1f–%.1f) | %.1f (%.1f–%.1f) | %.2f× | %.1f + %.1f | %.1f + %.1f |\n", q.Where, a.answer.Rows, a.bytes, d.bytes,
			a.warm[1], a.warm[0], a.warm[2], d.warm[1], d.warm[0], d.warm[2], d.warm[1]/a.warm[1], a.cpuReader, a.cpuServers, d.cpuReader, d.cpuServers)
		t.Logf("%-48s rows %6d connector %10d bytes %.1fms cpu %.1f+%.1fms  DuckDB %10d bytes %.1fms cpu %.1f+%.1fms", q.Name, a.answer.Rows, a.bytes, a.warm[1],
			a.cpuReader, a.cpuServers, d.bytes, d.warm[1], d.cpuReader, d.cpuServers)
	}
	root, _ := harness.RepoRoot() // bench/peer (its own module)
	if err := os.WriteFile(filepath.Join(root, "..", "results", "kinds_peer.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
