package peer

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// TestIcebergWriterPeerBenchmark puts the side-index issue's point lookup
// and 100-id IN on a table written by iceberg-go's own writer
// (benchutil.CreateIcebergGoTable: no page index, no bloom filters) to the
// connector with a btree on id and side page indexes on the projected
// columns, and to DuckDB reading the same files through `weed mount`.
// Rows must agree; cold is the first query (a fresh connector; DuckDB's
// first query after the mount), warm the median of 11 after it, 3 runs.
// Results: bench/results/sideindex_icebergwriter_peer.md.
func TestIcebergWriterPeerBenchmark(t *testing.T) {
	requireBenchAsRoot(t, "benchmark: run with `BENCH=sideindex-igo ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	rows := int64(envInt("LAKEWEED_BENCH_ROWS", 1_000_000))
	const runs = 3
	ctx := context.Background()
	c := harness.StartMini(t, harness.MiniOptions{})
	tbl := benchutil.CreateIcebergGoTable(t, c, "peerigo", "events", rows)
	const name = "peerigo.events"
	kindq.CreateIndexes(t, c, name, [2]string{"id", "btree"})
	for _, col := range strings.Split(benchutil.IcebergGoProjection, ",") {
		kindq.CreateIndexes(t, c, name, [2]string{col, "page_index"})
	}
	dir, _ := benchutil.MountTableData(t, c, tbl.Location(), "mnt")
	names, wheres, want := benchutil.IcebergGoQueries(rows)
	sel := strings.Split(benchutil.IcebergGoProjection, ",")

	connectorQuery := func(conn *connector.Connector, where string) ([]int64, error) {
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: where, Select: sel})
		if err != nil {
			return nil, err
		}
		defer res.Release()
		var ids []int64
		for _, rec := range res.Records {
			col := rec.Column(0).(*array.Int64)
			for i := 0; i < col.Len(); i++ {
				ids = append(ids, col.Value(i))
			}
		}
		slices.Sort(ids)
		return ids, nil
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	duckQuery := func(where string) ([]int64, error) {
		rs, err := db.Query(fmt.Sprintf("SELECT %s FROM read_parquet('%s/*.parquet') WHERE %s", benchutil.IcebergGoProjection, dir, where))
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var ids []int64
		for rs.Next() {
			var id int64
			var tenant, msg string
			var ts time.Time
			if err := rs.Scan(&id, &tenant, &ts, &msg); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids, rs.Err()
	}
	type figs struct{ cold, warm []float64 }
	conn, duck := map[string]*figs{}, map[string]*figs{}
	timed := func(f *figs, first bool, fn func() ([]int64, error), want []int64, what string) {
		t0 := time.Now()
		got, err := fn()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := float64(time.Since(t0).Microseconds()) / 1000
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		if first {
			f.cold = append(f.cold, d)
		} else {
			f.warm = append(f.warm, d)
		}
	}
	for r := 0; r < runs; r++ {
		for i, q := range names {
			if conn[q] == nil {
				conn[q], duck[q] = &figs{}, &figs{}
			}
			cn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			var warm []float64
			for k := 0; k < 12; k++ {
				f := &figs{}
				timed(f, k == 0, func() ([]int64, error) { return connectorQuery(cn, wheres[i]) }, want[i], "connector "+q)
				if k == 0 {
					conn[q].cold = append(conn[q].cold, f.cold...)
				} else {
					warm = append(warm, f.warm...)
				}
			}
			cn.Close()
			conn[q].warm = append(conn[q].warm, benchutil.Median(warm))
			warm = nil
			for k := 0; k < 12; k++ {
				f := &figs{}
				timed(f, k == 0, func() ([]int64, error) { return duckQuery(wheres[i]) }, want[i], "duckdb "+q)
				if k == 0 {
					duck[q].cold = append(duck[q].cold, f.cold...)
				} else {
					warm = append(warm, f.warm...)
				}
			}
			duck[q].warm = append(duck[q].warm, benchutil.Median(warm))
			t.Logf("run %d %s: connector cold %.1f warm %.1f ms; duckdb cold %.1f warm %.1f ms", r+1, q,
				conn[q].cold[r], conn[q].warm[r], duck[q].cold[r], duck[q].warm[r])
		}
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Side indexes on a table written by iceberg-go's own writer: the connector against DuckDB\n\n"+
		"`BENCH=sideindex-igo ./scripts/bench.sh` on the 2-core development machine, `weed mini -pushdown`; %d rows written by iceberg-go's `AppendTable` "+
		"(no page index, no bloom filters, column metrics off, ids shuffled; benchutil.CreateIcebergGoTable); the connector with a btree on `id` and side page indexes "+
		"on `%s`, DuckDB (duckdb-go) reading the same files through `weed mount`; both return the projection and agree on the rows. "+
		"Cold: the first query (a fresh connector; DuckDB's first query of the run — the first run's is the first after the mount), warm: the median of 11 after it; "+
		"run 1 with the min–max over %d runs.\n\n", rows, benchutil.IcebergGoProjection, runs)
	fmt.Fprintf(&md, "| query | connector cold ms | DuckDB cold ms | connector warm ms | DuckDB warm ms | warm: DuckDB / connector |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, q := range names {
		fmt.Fprintf(&md, "| %s | %.1f (%s) | %.1f (%s) | %.1f (%s) | %.1f (%s) | %.1f× |\n", q,
			conn[q].cold[0], benchutil.MinMax(conn[q].cold, "%.1f"), duck[q].cold[0], benchutil.MinMax(duck[q].cold, "%.1f"),
			conn[q].warm[0], benchutil.MinMax(conn[q].warm, "%.1f"), duck[q].warm[0], benchutil.MinMax(duck[q].warm, "%.1f"), benchutil.Median(duck[q].warm)/benchutil.Median(conn[q].warm))
	}
	if err := os.WriteFile(filepath.Join("..", "results", "sideindex_icebergwriter_peer.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
