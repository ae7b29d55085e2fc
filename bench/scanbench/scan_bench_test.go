// Package scanbench measures filtering next to the data (volume ScanRows)
// against reading the planned pages here, on the 1M-row `weed pushdown
// demo` table written with -indexed none: for each query, the bytes that
// reached the connector, the Arrow bytes of the answer, and warm latency,
// with -filterAt here, volume and auto, beside DuckDB's warm latency on
// the same files (local copies, and over weed mount). Run with `BENCH=scan
// ./scripts/bench.sh`; results land in bench/results/scan.md.
//
//	demo -indexed none ─▶ index create ngram(message) -wait
//	   ─▶ per query × -filterAt here|volume|auto: one cold query (bytes),
//	      then runs × warmRuns warm queries (median per run)
//	   ─▶ DuckDB, per query, local copies and weed mount: the same runs
package scanbench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

const (
	runs     = 3
	warmRuns = 7
)

// queries: an ngram-candidate LIKE, two equalities no index answers, and
// a LIKE whose few matches are scattered over every page (trace ids are
// random hex: one row in 4,096 starts with "000").
var queries = []struct{ name, where string }{
	{"ngram LIKE", "message LIKE '%timeout%'"},
	{"tenant equality", "tenant_id = 'tenant-042'"},
	{"status and tenant", "status = 'error' AND tenant_id = 'tenant-042'"},
	{"scattered LIKE", "message LIKE '%trace=000%'"},
}

const selectCols = "id, ts, tenant_id, status, message"

type measured struct {
	rows, read, readWarm, fromVolume, answer int64
	volumeGroups, hereGroups                 int64
	warm                                     []float64
}

// peerMeasured is DuckDB's query on the same files, from local disk or
// over weed mount.
type peerMeasured struct {
	rows int64
	warm []float64 // run medians, sorted
	skip string    // why it did not run
}

func TestScanBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `BENCH=scan ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	}
	rows := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	ctx := context.Background()
	loadStart := benchutil.LoadAverage()
	c := harness.StartMini(t, harness.MiniOptions{})
	const name = "bench.scan"
	spec := demo.DefaultSpec()
	spec.Rows, spec.Indexed = rows, demo.IndexedNone
	loaded, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "message", "-kind", "ngram", "-wait"); err != nil {
		t.Fatalf("index create: %v\n%s%s", err, out, errOut)
	}
	sites := []connector.FilterSite{connector.FilterHere, connector.FilterVolume, connector.FilterAuto}
	got := map[string]map[connector.FilterSite]measured{}
	for _, q := range queries {
		got[q.name] = map[connector.FilterSite]measured{}
		for _, site := range sites {
			// a fresh connector per query and site: its first query's
			// bytes are its own (no range cached by another)
			conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true, FilterAt: site})
			if err != nil {
				t.Fatal(err)
			}
			run := func() (connector.Stats, int64) {
				var answer int64
				res, err := conn.Stream(ctx, connector.Query{Table: name, Where: q.where, Select: strings.Split(selectCols, ", ")}, func(rec arrow.RecordBatch) error {
					for _, col := range rec.Columns() {
						answer += int64(col.Data().SizeInBytes())
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s, -filterAt %s: %v", q.where, site, err)
				}
				return res.Stats, answer
			}
			st, answer := run()
			m := measured{rows: st.Rows, read: st.BytesRead, fromVolume: st.BytesFilterVolume, answer: answer, volumeGroups: st.FilterVolumeRowGroups, hereGroups: st.FilterHereRowGroups}
			for r := 0; r < runs; r++ {
				var d []time.Duration
				for i := 0; i < warmRuns; i++ {
					t0 := time.Now()
					st, _ := run()
					d = append(d, time.Since(t0))
					m.readWarm = st.BytesRead // footers cached, pages in the range cache
					if st.Rows != m.rows {
						t.Fatalf("%s, -filterAt %s: %d rows, then %d", q.where, site, m.rows, st.Rows)
					}
				}
				m.warm = append(m.warm, benchutil.P50(d))
			}
			conn.Close()
			if m.rows != got[q.name][connector.FilterHere].rows && site != connector.FilterHere {
				t.Errorf("%s: -filterAt %s %d rows, here %d", q.where, site, m.rows, got[q.name][connector.FilterHere].rows)
			}
			got[q.name][site] = m
			slices.Sort(m.warm)
			t.Logf("%-20s -filterAt %-6s rows %6d read %10d (answer %10d, %.2f×) volume/here row groups %d/%d warm %.1fms (%.1f-%.1f)",
				q.name, site, m.rows, m.read, m.answer, ratio(m.read, m.answer), m.volumeGroups, m.hereGroups, m.warm[len(m.warm)/2], m.warm[0], m.warm[len(m.warm)-1])
		}
	}
	// DuckDB on the same files: copies on local disk, and over weed mount
	// (its chunk cache warm after the first query)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	local := "read_parquet(['" + strings.Join(harness.DownloadTable(t, c, name), "', '") + "'])"
	mounted, mountSkip := "", benchutil.CanMount()
	if mountSkip == "" {
		dir, _ := benchutil.MountTableData(t, c, loaded.Location, "mnt")
		mounted = "read_parquet('" + dir + "/*.parquet')"
	}
	peer := map[string]map[string]peerMeasured{}
	for _, q := range queries {
		peer[q.name] = map[string]peerMeasured{}
		for _, src := range []struct{ label, from, skip string }{{"local", local, ""}, {"mount", mounted, mountSkip}} {
			if src.skip != "" {
				peer[q.name][src.label] = peerMeasured{skip: src.skip}
				continue
			}
			query := fmt.Sprintf("SELECT %s FROM %s WHERE %s", selectCols, src.from, q.where)
			run := func() int64 {
				rs, err := duck.QueryContext(ctx, query)
				if err != nil {
					t.Fatalf("DuckDB %s: %v", src.label, err)
				}
				defer rs.Close()
				var n int64
				var id int64
				var ts time.Time
				var tenant, status, message string
				for rs.Next() {
					if err := rs.Scan(&id, &ts, &tenant, &status, &message); err != nil {
						t.Fatalf("DuckDB %s: %v", src.label, err)
					}
					n++
				}
				if err := rs.Err(); err != nil {
					t.Fatalf("DuckDB %s: %v", src.label, err)
				}
				return n
			}
			m := peerMeasured{rows: run()} // untimed: the mount's cache and DuckDB's metadata warm
			for r := 0; r < runs; r++ {
				var d []time.Duration
				for i := 0; i < warmRuns; i++ {
					t0 := time.Now()
					run()
					d = append(d, time.Since(t0))
				}
				m.warm = append(m.warm, benchutil.P50(d))
			}
			slices.Sort(m.warm)
			if want := got[q.name][connector.FilterHere].rows; m.rows != want {
				t.Errorf("%s: DuckDB (%s) %d rows, lakeweed %d", q.where, src.label, m.rows, want)
			}
			peer[q.name][src.label] = m
			t.Logf("%-20s DuckDB %-5s rows %6d warm %.1fms (%.1f-%.1f)", q.name, src.label, m.rows, m.warm[len(m.warm)/2], m.warm[0], m.warm[len(m.warm)-1])
		}
	}
	peerCell := func(m peerMeasured) string {
		if m.skip != "" {
			return "not run: " + m.skip
		}
		return fmt.Sprintf("%.1f (%.1f–%.1f)", m.warm[len(m.warm)/2], m.warm[0], m.warm[len(m.warm)-1])
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Filtering next to the data (volume ScanRows)\n\n`BENCH=scan ./scripts/bench.sh` on the 2-core development machine (shared with other work, noisy), `weed mini -pushdown` "+
		"(connector and volume service on one host), %d demo rows written with `-indexed none`, an ngram side index on message. SELECT %s. "+
		"Connector: page-aware, forced pushdown, a fresh connector per query and `-filterAt` (its first query's bytes are its own). "+
		"Bytes read: what reached the connector on the first query (footers, then pages or the matching rows the volume sent); warm: on its last query (footers cached, pages served by its range cache); answer: the Arrow bytes of the result's columns. "+
		"Warm latency: the median of %d queries per run, %d runs, spread of the run medians. "+
		"DuckDB (duckdb-go, embedded, in the benchmark's process) runs the same SELECT … WHERE on the same Parquet files, copied to local disk and over `weed mount` "+
		"(after one untimed query; the same runs and medians); its columns repeat on each row of a query. Load average at the start: %s, at the end: %s.\n\n",
		rows, selectCols, warmRuns, runs, loadStart, benchutil.LoadAverage())
	fmt.Fprintf(&md, "| query | rows | -filterAt | bytes read | answer bytes | read / answer | bytes read warm | warm read / answer | row groups volume / here | warm ms median (spread) | DuckDB local warm ms | DuckDB over weed mount warm ms |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, q := range queries {
		for _, site := range sites {
			m := got[q.name][site]
			fmt.Fprintf(&md, "| `%s` | %d | %s | %d | %d | %.2f | %d | %.2f | %d / %d | %.1f (%.1f–%.1f) | %s | %s |\n", q.where, m.rows, site, m.read, m.answer, ratio(m.read, m.answer), m.readWarm, ratio(m.readWarm, m.answer),
				m.volumeGroups, m.hereGroups, m.warm[len(m.warm)/2], m.warm[0], m.warm[len(m.warm)-1], peerCell(peer[q.name]["local"]), peerCell(peer[q.name]["mount"]))
		}
	}
	if err := os.WriteFile(filepath.Join("..", "results", "scan.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
