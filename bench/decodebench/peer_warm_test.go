// Package decodebench measures the connector's warm decode on the peer
// benchmark's tables (bench/peer) in this process, without DuckDB or
// weed mount: the point lookup on the unclustered id and the status
// equality, on tables written with page indexes and bloom filters in all,
// half and none of the files. Per table and query it reports the median
// warm latency, its spread and the CPU per query (this process and the
// cluster), and with LAKEWEED_BENCH_PROFILE=prefix writes CPU profiles
// of 10 s of warm queries (prefix.<table>.<query>.pprof, and the
// cluster's beside it as ….cluster.pprof):
//
//	load tables ─▶ per table, per query: 3 warm-up, N measured (CPU deltas)
//	           ─▶ (profile) 10 s of warm queries under pprof
//
//	LAKEWEED_BENCH=1 go test -count=1 -run TestPeerWarmDecode -v ./bench/decodebench/
//	  LAKEWEED_PEER_MODES=all,half,none  LAKEWEED_DECODE_QUERIES=point,status
//	  LAKEWEED_DECODE_RUNS=20  LAKEWEED_BENCH_ROWS=1000000
//	  LAKEWEED_DECODE_FILTER_AT=auto|here|volume (default auto)
//	  LAKEWEED_DECODE_SELECT=id,ts,message (default: each query's columns)
package decodebench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

type decodeQuery struct {
	name  string
	where string
	sel   []string
	rows  int64 // the rows it matches
}

// peerQueries are bench/peer's point lookup and status equality, a
// tenant equality and a ts window.
func peerQueries(rows int64) []decodeQuery {
	spec := demo.DefaultSpec()
	return []decodeQuery{
		{"point", fmt.Sprintf("id = %d", rows/3), []string{"id", "tenant_id", "status", "message"}, 1},
		{"status", "status = 'error'", []string{"id", "status"}, -1},
		{"tenant", "tenant_id = 'tenant-042'", []string{"id", "tenant_id", "status"}, -1},
		// half a percent of the clustered ts: the page index plans a few
		// pages of each column (decoded page by page, not sparsely)
		{"window", fmt.Sprintf("ts >= %s AND ts < %s", tsLiteral(spec.TimestampOf(rows/2)), tsLiteral(spec.TimestampOf(rows/2+rows/200))),
			[]string{"id", "tenant_id", "status", "message"}, rows / 200},
	}
}

func tsLiteral(t time.Time) string {
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'"
}

func envList(k, def string) []string {
	v := os.Getenv(k)
	if v == "" {
		v = def
	}
	return strings.Split(v, ",")
}

func TestPeerWarmDecode(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: set LAKEWEED_BENCH=1")
	}
	profile := os.Getenv("LAKEWEED_BENCH_PROFILE")
	port := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-debug", "-debug.port=" + strconv.Itoa(port)}})
	ctx := context.Background()
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	runs := 20
	if v, err := strconv.Atoi(os.Getenv("LAKEWEED_DECODE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	modes := envList("LAKEWEED_PEER_MODES", "all,half,none")
	wanted := envList("LAKEWEED_DECODE_QUERIES", "point,status")
	for _, mode := range modes {
		spec := demo.DefaultSpec()
		spec.Rows, spec.Indexed = rows, demo.Indexed(mode)
		if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "peer." + mode, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	site := connector.FilterAuto
	if v := os.Getenv("LAKEWEED_DECODE_FILTER_AT"); v != "" {
		var err error
		if site, err = connector.ParseFilterSite(v); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true, FilterAt: site})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	clusterCPU := func() time.Duration { return benchutil.ProcCPU(c.Proc.Cmd.Process.Pid) }
	for _, mode := range modes {
		for _, q := range peerQueries(rows) {
			if !slices.Contains(wanted, q.name) {
				continue
			}
			if v := os.Getenv("LAKEWEED_DECODE_SELECT"); v != "" {
				q.sel = strings.Split(v, ",")
			}
			var st connector.Stats
			var got int64
			run := func() {
				res, err := conn.Query(ctx, connector.Query{Table: "peer." + mode, Where: q.where, Select: q.sel})
				if err != nil {
					t.Fatalf("%s %s: %v", mode, q.name, err)
				}
				got = 0
				for _, r := range res.Records {
					got += r.NumRows()
				}
				st = res.Stats
				res.Release()
				if q.rows >= 0 && got != q.rows {
					t.Fatalf("%s %s: %d rows, want %d", mode, q.name, got, q.rows)
				}
			}
			for w := 0; w < 3; w++ {
				run()
			}
			runtime.GC()
			var lat []float64
			cpu0, srv0 := benchutil.SelfCPU(), clusterCPU()
			for i := 0; i < runs; i++ {
				t0 := time.Now()
				run()
				lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			}
			self := float64((benchutil.SelfCPU() - cpu0).Microseconds()) / 1000 / float64(runs)
			srv := float64((clusterCPU() - srv0).Microseconds()) / 1000 / float64(runs)
			t.Logf("decode_bench %-5s %-7s rows %7d warm median %6.1f ms (%s) cpu %5.1f+%5.1f ms; sparse %d decoded %d exact %d volume %d rgs %d",
				mode, q.name, got, benchutil.Median(lat), benchutil.MinMax(lat, "%.1f"), self, srv, st.SparseColumns, st.RowsDecoded, st.ExactRowGroups, st.VolumeRowGroups, st.RowGroups)
			if profile == "" {
				continue
			}
			out := fmt.Sprintf("%s.%s.%s", profile, mode, q.name)
			w := benchutil.ProfileWarm(t, port, c.Proc.Cmd.Process.Pid, out+".pprof", out+".cluster.pprof", run)
			t.Logf("%s %s: %d queries profiled: %s.pprof (allocations: .allocs0, .allocs), %s.cluster.pprof", mode, q.name, len(w.Latencies), out, out)
		}
	}
}
