package sideindexbench

// Side indexes on a table written by iceberg-go's own writer (no page
// index, no bloom filters, statistics off: what many writers produce):
// a point lookup and a 100-id IN on a shuffled id, with no side index,
// with a btree on id, and with side page indexes on the projected columns
// too. Planned bytes against the physical minimum — the pages holding the
// matching rows plus their dictionaries, as the page headers (and so the
// side page_index built from them) locate them; the files carry no page
// index of their own — and warm latency of the connector against
// iceberg-go's scan. Run with `BENCH=sideindex-igo ./scripts/bench.sh`.
//
//	iceberg-go AppendTable ─▶ plans/queries (none) ─▶ btree(id) ─▶ plans/queries
//	  ─▶ page_index(projected) ─▶ plans/queries + the plan's page refs (the minimum)
//	  ─▶ iceberg-go scans ─▶ bench/results/sideindex_icebergwriter.md

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

const igoProjection = benchutil.IcebergGoProjection

func TestSideIndexIcebergGoWriterBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `BENCH=sideindex-igo ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	}
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	const runs, name = 3, "bench.igo"
	ctx := context.Background()
	c := harness.StartMini(t, harness.MiniOptions{})
	cat := c.Iceberg(t)
	benchutil.CreateIcebergGoTable(t, c, "bench", "igo", rows)
	tasks, err := func() ([]table.FileScanTask, error) {
		tb, err := cat.LoadTable(ctx, table.Identifier{"bench", "igo"})
		if err != nil {
			return nil, err
		}
		return tb.Scan().PlanFiles(ctx)
	}()
	if err != nil {
		t.Fatal(err)
	}
	names, wheres, _ := benchutil.IcebergGoQueries(rows)
	var qs []query
	for i := range names {
		qs = append(qs, query{names[i], wheres[i]})
	}
	states := []string{"none", "btree(id)", "+ side page_index on every projected column"}
	type fig struct {
		planned, read, minimum int64
		plan, query            []float64
	}
	got := map[string]map[string]*fig{}
	runState := func(state string) {
		got[state] = map[string]*fig{}
		for _, q := range qs {
			f := &fig{}
			got[state][q.name] = f
			for r := 0; r < runs; r++ {
				conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true})
				if err != nil {
					t.Fatal(err)
				}
				res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.where, Select: strings.Split(igoProjection, ",")})
				if err != nil {
					t.Fatal(err)
				}
				f.read = res.Stats.BytesRead // the first query of a fresh connector: nothing cached
				res.Release()
				m := measureWith(t, c, conn, name, q, igoProjection)
				conn.Close()
				f.planned = m.planned
				f.plan, f.query = append(f.plan, m.planMs), append(f.query, m.query)
			}
			req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), name, 0, q.where, igoProjection)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Catalog(t).Plan(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, pg := range resp.GetPages() {
				f.minimum += pg.GetLength()
			}
			t.Logf("%-16s %-45s planned %9d read %9d pages %9d plan %.2fms query %.1fms", q.name, state, f.planned, f.read, f.minimum,
				benchutil.Median(f.plan), benchutil.Median(f.query))
		}
	}
	runState(states[0])
	kindq.CreateIndexes(t, c, name, [2]string{"id", "btree"})
	runState(states[1])
	for _, col := range strings.Split(igoProjection, ",") {
		kindq.CreateIndexes(t, c, name, [2]string{col, "page_index"})
	}
	runState(states[2])
	// The physical minimum: the page refs of the plan with every index
	// (pages holding matching rows, plus dictionaries).
	minimum := map[string]int64{}
	for _, q := range qs {
		minimum[q.name] = got[states[2]][q.name].minimum
	}
	// iceberg-go's scan of the same query, warm (a second scan per run).
	scans := map[string][]float64{}
	for _, q := range qs {
		var lits []iceberg.BooleanExpression
		if q.name == "point lookup id" {
			lits = append(lits, iceberg.EqualTo(iceberg.Reference("id"), rows/3))
		} else {
			for i := int64(1); i <= 100; i++ {
				lits = append(lits, iceberg.EqualTo(iceberg.Reference("id"), i*rows/101))
			}
		}
		filter := lits[0]
		for _, l := range lits[1:] {
			filter = iceberg.NewOr(filter, l)
		}
		tb, err := cat.LoadTable(ctx, table.Identifier{"bench", "igo"})
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < runs+1; r++ {
			t0 := time.Now()
			out, err := tb.Scan(table.WithRowFilter(filter), table.WithSelectedFields(strings.Split(igoProjection, ",")...)).ToArrowTable(ctx)
			if err != nil {
				t.Fatalf("iceberg-go scan %s: %v", q.name, err)
			}
			if r > 0 {
				scans[q.name] = append(scans[q.name], float64(time.Since(t0).Microseconds())/1000)
			}
			out.Release()
		}
	}
	c.Proc.Stop(20 * time.Second)

	var md strings.Builder
	fmt.Fprintf(&md, "# Side indexes on a table written by iceberg-go's own writer\n\n`BENCH=sideindex-igo ./scripts/bench.sh` on the 2-core development machine (shared, noisy), `weed mini -pushdown`. "+
		"%d rows written by iceberg-go's `AppendTable` (%d files, 131,072-row row groups, no page index, no bloom filters, column metrics off), ids shuffled; projection `%s`. "+
		"Physical minimum: the pages holding matching rows plus their dictionaries, as the page headers locate them (the page refs of the plan with every side index; "+
		"the files carry no page index, so no twin written with one exists). Bytes read: a fresh connector's first query. "+
		"Warm: medians of 20 plans and 5 connector queries after a warm-up, run medians over %d runs (min–max); iceberg-go: a warm scan with the same filter, %d runs.\n\n",
		rows, len(tasks), igoProjection, runs, runs)
	fmt.Fprintf(&md, "| query | side indexes | planned bytes | planned / physical min | bytes read | warm plan ms | warm query ms | iceberg-go scan ms | vs iceberg-go |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, q := range qs {
		for _, st := range states {
			f := got[st][q.name]
			ratio := "n/a"
			if m := minimum[q.name]; m > 0 {
				ratio = fmt.Sprintf("%.3f×", float64(f.planned)/float64(m))
			}
			fmt.Fprintf(&md, "| %s | %s | %d | %s | %d | %.2f (%s) | %.1f (%s) | %.1f (%s) | %.1f× |\n", q.name, st, f.planned, ratio, f.read,
				benchutil.Median(f.plan), benchutil.MinMax(f.plan, "%.2f"), benchutil.Median(f.query), benchutil.MinMax(f.query, "%.1f"),
				benchutil.Median(scans[q.name]), benchutil.MinMax(scans[q.name], "%.1f"), benchutil.Median(scans[q.name])/benchutil.Median(f.query))
		}
	}
	if err := os.WriteFile(filepath.Join("..", "results", "sideindex_icebergwriter.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
