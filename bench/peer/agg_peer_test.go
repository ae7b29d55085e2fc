package peer

// Aggregates: the one SQL front end (sqlexec: arrow-go records from the
// connector's pushdown read, our own grouping; or partial aggregates
// computed by the volume servers and merged), in the caller's process and
// through the cluster's Flight SQL endpoint, against DuckDB over the same
// Parquet files on local disk, and (built with -tags duckdb_arrow) DuckDB
// fed by our pushdown read as Arrow: the second engine the front end could
// use. Warm p50 of three runs after one untimed run; bytes the connector
// read from the cluster.
//
//	demo table (LAKEWEED_BENCH_ROWS, default 1M) ─▶ files downloaded for DuckDB
//	  ─▶ per query: lakeweed, DuckDB local, [DuckDB over our Arrow] ─▶ bench/results/aggregates.md

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

type aggQuery struct {
	name string
	sql  string // FROM %s
}

var aggQueries = []aggQuery{
	{"GROUP BY tenant_id, status", "SELECT tenant_id, status, COUNT(*) AS n, AVG(id) AS avg_id, MAX(id) AS max_id FROM %s GROUP BY tenant_id, status"},
	{"COUNT(*) WHERE status = 'error'", "SELECT COUNT(*) AS n FROM %s WHERE status = 'error'"},
	{"COUNT(*) WHERE tenant_id = 'tenant-042'", "SELECT COUNT(*) AS n FROM %s WHERE tenant_id = 'tenant-042'"},
	{"COUNT(*)", "SELECT COUNT(*) AS n FROM %s"},
}

// arrowEngine, when built with -tags duckdb_arrow, runs a query in DuckDB
// over the connector's pushdown read of its columns, registered as an
// Arrow view.
var arrowEngine func(ctx context.Context, conn *connector.Connector, table string, q aggQuery) (rows int, err error)

func TestAggregateBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with make bench (BENCH=aggregates)")
	}
	rows := int64(1_000_000)
	if v := os.Getenv("LAKEWEED_BENCH_ROWS"); v != "" {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	flightPort := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.flightsql.port=" + strconv.Itoa(flightPort)}})
	ctx := context.Background()
	const name = "agg_bench.events"
	spec := demo.DefaultSpec()
	spec.Rows = rows
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	files := harness.DownloadTable(t, c, name)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	from := "read_parquet(['" + strings.Join(files, "', '") + "'])"
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	fc, err := flightsql.NewClient("127.0.0.1:"+strconv.Itoa(flightPort), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	// overFlight runs q through Flight SQL; answer is the Arrow bytes
	// the client received.
	overFlight := func(q string) (answer int64, err error) {
		info, err := fc.Execute(ctx, q)
		if err != nil {
			return 0, err
		}
		for _, ep := range info.Endpoint {
			rdr, err := fc.DoGet(ctx, ep.Ticket)
			if err != nil {
				return 0, err
			}
			for rdr.Next() {
				answer += recordBytes(rdr.RecordBatch())
			}
			err = rdr.Err()
			rdr.Release()
			if err != nil {
				return 0, err
			}
		}
		return answer, nil
	}

	warm := func(run func() error) (float64, error) {
		if err := run(); err != nil { // untimed warm-up
			return 0, err
		}
		var d []time.Duration
		for range 3 {
			start := time.Now()
			if err := run(); err != nil {
				return 0, err
			}
			d = append(d, time.Since(start))
		}
		return benchutil.P50(d), nil
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Aggregates (%d rows, %d files; warm p50 of 3 runs, ms; load %s)\n\n", rows, len(files), benchutil.LoadAverage())
	md.WriteString("| query | lakeweed here (-aggregateAt here) | bytes read from the cluster | answered by | lakeweed, volume partial aggregates (-aggregateAt volume) | bytes to the caller | answered by | lakeweed over Flight SQL (auto) | Arrow bytes to the Flight SQL caller | DuckDB, local files | DuckDB over lakeweed's Arrow |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	// sqlexec in the caller with o, its stats
	timed := func(q aggQuery, o sqlexec.Options) (float64, sqlexec.Stats) {
		var stats sqlexec.Stats
		ms, err := warm(func() error {
			st, err := sqlstmt.Parse(fmt.Sprintf(q.sql, name))
			if err != nil {
				return err
			}
			res, err := sqlexec.Run(ctx, conn, st, o, func(arrow.RecordBatch) error { return nil })
			if err == nil {
				stats = res.Stats
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		return ms, stats
	}
	for _, q := range aggQueries {
		ours, stats := timed(q, sqlexec.Options{AggregateAt: connector.AggregateHere})
		partials, pstats := timed(q, sqlexec.Options{AggregateAt: connector.AggregateVolume})
		var answer int64
		flightMs, err := warm(func() error {
			var err error
			answer, err = overFlight(fmt.Sprintf(q.sql, name))
			return err
		})
		if err != nil {
			t.Fatalf("Flight SQL %s: %v", q.name, err)
		}
		duck, err := warm(func() error {
			r, err := db.QueryContext(ctx, fmt.Sprintf(q.sql, from))
			if err != nil {
				return err
			}
			for r.Next() {
			}
			r.Close()
			return r.Err()
		})
		if err != nil {
			t.Fatalf("DuckDB %s: %v", q.name, err)
		}
		fed := "not built (-tags duckdb_arrow)"
		if arrowEngine != nil {
			ms, err := warm(func() error { _, err := arrowEngine(ctx, conn, name, q); return err })
			if err != nil {
				t.Fatalf("DuckDB over Arrow %s: %v", q.name, err)
			}
			fed = fmt.Sprintf("%.1f", ms)
		}
		line := fmt.Sprintf("| %s | %.1f | %d | %s | %.1f | %d | %s | %.1f | %d | %.1f | %s |\n", q.name, ours, stats.BytesRead, stats.AnsweredBy,
			partials, pstats.BytesRead, pstats.AnsweredBy, flightMs, answer, duck, fed)
		t.Log("agg_bench " + strings.TrimSpace(line))
		md.WriteString(line)
	}
	out := "aggregates.md"
	if rows != 1_000_000 {
		out = fmt.Sprintf("aggregates_%d.md", rows)
	}
	if err := os.WriteFile(filepath.Join("..", "results", out), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordBytes is the size of a record's Arrow buffers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, col := range rec.Columns() {
		add(col.Data())
	}
	return n
}
