// Package sideindexbench measures side indexes on `weed pushdown demo`
// data written without page index or bloom filters (-indexed none): bytes
// planned against the physical minimum, warm plan and query latency with
// and without a btree on id and a bloom on tenant_id, then with side page
// indexes on the projected columns too; volume-side build time with one
// core (GOMAXPROCS=1 on the cluster) and two, and payload size relative to
// the column. Run with `BENCH=sideindex ./scripts/bench.sh`; results land
// in bench/results/sideindex.md.
//
//	demo -indexed none ─▶ plans/queries (no side index) ─▶ index create btree(id), bloom(tenant_id) -wait
//	                   ─▶ plans/queries ─▶ index create page_index(projected columns) -wait
//	                   ─▶ plans/queries ─▶ volume BuildIndexes timings, payload bytes vs column bytes
//	twin table, same seed, -indexed all ─▶ physical minimum (same pages; the page index locates them)
package sideindexbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

const projection = "id,ts,tenant_id,status,message"

type query struct{ name, where string }

func queries(rows int64) []query {
	var ids []string
	for i := int64(1); i <= 100; i++ {
		ids = append(ids, fmt.Sprint(i*rows/101))
	}
	start := demo.DefaultSpec().StartTime
	span := time.Duration(rows) * 250 * time.Millisecond
	from := start.Add(span / 2)
	to := from.Add(span / 100)
	ts := func(t time.Time) string { return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }
	return []query{
		{"point lookup id", fmt.Sprintf("id = %d", rows/3)},
		{"100-id IN", "id IN (" + strings.Join(ids, ", ") + ")"},
		{"tenant_id equality", "tenant_id = 'tenant-042'"},
		{"1% ts range", fmt.Sprintf("ts >= %s AND ts < %s", ts(from), ts(to))},
	}
}

// measured is one query's figures in one run.
type measured struct {
	planned       int64
	planMs, query float64
}

func measure(t *testing.T, c *harness.Cluster, conn *connector.Connector, name string, q query) measured {
	return measureWith(t, c, conn, name, q, projection)
}

// measureWith is measure with another projection.
func measureWith(t *testing.T, c *harness.Cluster, conn *connector.Connector, name string, q query, projection string) measured {
	ctx := context.Background()
	req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), name, 0, q.where, projection)
	if err != nil {
		t.Fatal(err)
	}
	var plans, reads []time.Duration
	var last *pushdown_pb.ParquetPushdownResponse
	for i := 0; i < 21; i++ {
		t0 := time.Now()
		resp, err := c.Catalog(t).Plan(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		if i > 0 {
			plans = append(plans, time.Since(t0))
		}
		last = resp
	}
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.where, Select: strings.Split(projection, ",")})
		if err != nil {
			t.Fatalf("query %s: %v", q.name, err)
		}
		res.Release()
		if i > 0 {
			reads = append(reads, time.Since(t0))
		}
	}
	return measured{planned: last.GetStats().GetBytesPlanned(), planMs: benchutil.P50(plans), query: benchutil.P50(reads)}
}

func specOf(rows int64, idx demo.Indexed) demo.Spec {
	s := demo.DefaultSpec()
	s.Rows, s.Indexed = rows, idx
	return s
}

func load(t *testing.T, c *harness.Cluster, name string, s demo.Spec) {
	if _, err := demo.Load(context.Background(), demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: s}); err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
}

// sidePageColumns are the columns given page_index side indexes: the
// projection (the predicate columns are in it).
var sidePageColumns = strings.Split(projection, ",")

func TestSideIndexBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `BENCH=sideindex ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	}
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	const runs = 3
	qs := queries(rows)
	var md strings.Builder
	fmt.Fprintf(&md, "# Side indexes\n\n`BENCH=sideindex ./scripts/bench.sh` on the 2-core development machine (shared, noisy), `weed mini -pushdown`, "+
		"%d demo rows in 8 files written with `-indexed none` (no page index, no bloom filters); side indexes: none, then btree on `id` and bloom on `tenant_id`, then also page_index on every projected column; "+
		"projection `%s`. Physical minimum: the pages holding matching rows plus their dictionaries, measured on a twin table of the same seed written "+
		"with page indexes (same pages). Warm latencies are medians of 20 plans (catalog gRPC) and 5 connector queries, after one warm-up; %d runs.\n\n", rows, projection, runs)

	// Two cores.
	c := harness.StartMini(t, harness.MiniOptions{})
	load(t, c, "bench.side", specOf(rows, demo.IndexedNone))
	load(t, c, "bench.twin", specOf(rows, demo.IndexedAll))
	wheres := map[string]string{}
	for _, q := range qs {
		wheres[q.name] = q.where
	}
	mins := benchutil.PhysicalMinimum(t, c, "bench.twin", wheres, projection)
	conn, err := connector.New(context.Background(), connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	states := []string{"none", "btree(id) + bloom(tenant_id)", "+ side page_index on every projected column"}
	got := map[string]map[string][]measured{}
	runState := func(state string) {
		got[state] = map[string][]measured{}
		for r := 0; r < runs; r++ {
			for _, q := range qs {
				got[state][q.name] = append(got[state][q.name], measure(t, c, conn, "bench.side", q))
			}
		}
	}
	runState(states[0])
	kindq.CreateIndexes(t, c, "bench.side", [2]string{"id", "btree"}, [2]string{"tenant_id", "bloom"})
	runState(states[1])
	for _, col := range sidePageColumns {
		kindq.CreateIndexes(t, c, "bench.side", [2]string{col, "page_index"})
	}
	runState(states[2])
	type build struct {
		column, kind string
		wall, busy   [2]float64 // one core, two cores
		payload, col int64
	}
	builds := []*build{{column: "id", kind: "btree"}, {column: "tenant_id", kind: "bloom"}, {column: "ts", kind: "page_index"}}
	for _, b := range builds {
		b.wall[1], b.busy[1] = benchutil.BuildSeconds(t, c, "bench.side", b.column, b.kind)
		b.col = benchutil.ColumnBytes(t, c, "bench.side", b.column)
	}
	for _, b := range builds[:2] {
		b.payload = benchutil.PayloadBytes(t, c, "bench.side", b.kind, 0)
	}
	var pagePayload, pageCols int64
	for _, col := range sidePageColumns {
		pageCols += benchutil.ColumnBytes(t, c, "bench.side", col)
	}
	pagePayload = benchutil.PayloadBytes(t, c, "bench.side", "page_index", 0)
	c.Proc.Stop(20 * time.Second)

	// One core: GOMAXPROCS=1 on the cluster process (one build slot).
	c1 := harness.StartMini(t, harness.MiniOptions{Env: []string{"GOMAXPROCS=1"}})
	load(t, c1, "bench.side", specOf(rows, demo.IndexedNone))
	for _, b := range builds {
		b.wall[0], b.busy[0] = benchutil.BuildSeconds(t, c1, "bench.side", b.column, b.kind)
	}
	c1.Proc.Stop(20 * time.Second)

	fmt.Fprintf(&md, "## Bytes planned and warm latency (run 1; spread min–max over %d runs)\n\n", runs)
	fmt.Fprintf(&md, "| query | side indexes | planned bytes | planned / physical min | warm plan p50 ms | warm query p50 ms |\n| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, q := range qs {
		for _, state := range states {
			ms := got[state][q.name]
			m := ms[0]
			ratio := "n/a"
			if mins[q.name] > 0 {
				ratio = fmt.Sprintf("%.2f×", float64(m.planned)/float64(mins[q.name]))
			}
			lo, hi, qlo, qhi := m.planMs, m.planMs, m.query, m.query
			for _, x := range ms {
				lo, hi, qlo, qhi = min(lo, x.planMs), max(hi, x.planMs), min(qlo, x.query), max(qhi, x.query)
			}
			fmt.Fprintf(&md, "| %s | %s | %d | %s | %.2f (%.2f–%.2f) | %.1f (%.1f–%.1f) |\n", q.name, state, m.planned, ratio, m.planMs, lo, hi, m.query, qlo, qhi)
			t.Logf("%-18s %-45s planned %10d min %10d plan %.2fms (%.2f-%.2f) query %.1fms (%.1f-%.1f)", q.name, state, m.planned, mins[q.name], m.planMs, lo, hi, m.query, qlo, qhi)
		}
	}
	fmt.Fprintf(&md, "\n## Volume-side build of every file (one BuildIndexes call, median of 3) and payload size\n\n"+
		"| index | 1 core wall s | 2 cores wall s | speed-up | build CPU s (summed build_micros, 1 / 2 cores) | payload bytes | column bytes | payload / column |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, b := range builds {
		payload, colBytes := fmt.Sprint(b.payload), fmt.Sprint(b.col)
		ratio := fmt.Sprintf("%.3f", float64(b.payload)/float64(b.col))
		if b.kind == "page_index" {
			payload, colBytes = fmt.Sprintf("%d (all %d columns)", pagePayload, len(sidePageColumns)), fmt.Sprintf("%d (those columns)", pageCols)
			ratio = fmt.Sprintf("%.4f", float64(pagePayload)/float64(pageCols))
		}
		fmt.Fprintf(&md, "| %s(%s) | %.2f | %.2f | %.2f× | %.2f / %.2f | %s | %s | %s |\n", b.kind, b.column, b.wall[0], b.wall[1], b.wall[0]/b.wall[1], b.busy[0], b.busy[1], payload, colBytes, ratio)
		t.Logf("build %s(%s) 1 core %.2fs 2 cores %.2fs (%.2fx)", b.kind, b.column, b.wall[0], b.wall[1], b.wall[0]/b.wall[1])
	}
	if err := os.WriteFile(filepath.Join("..", "results", "sideindex.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
