//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// Aggregates through the one SQL front end (sqlexec over the connector)
// equal DuckDB's over the same data files with the table's deletes
// applied (position deletes written by iceberg-go; DuckDB gets the deleted
// ids as a predicate): random WHEREs and GROUP BYs, NULL messages, ORDER BY
// with NULLS FIRST/LAST, LIMIT/OFFSET; COUNT(*) without a WHERE is
// answered from the plan, reading no data file.
func TestAggregatesThroughTheConnectorEqualDuckDBsWithDeletesApplied(t *testing.T) {
	at := loadAggregateTable(t)
	db, from, r := at.db, at.from, at.r
	run := func(q string) ([][]any, *sqlexec.Result) {
		t.Helper()
		return at.run(t, q, sqlexec.Options{})
	}

	// COUNT(*) from the plan: no data file read, the deletes subtracted
	got, res := run("SELECT COUNT(*) AS n FROM %s")
	want := duckAnswer(t, db, fmt.Sprintf("SELECT COUNT(*) FROM %s", from))
	if msg := sameAnswer(got, want); msg != "" {
		t.Fatalf("COUNT(*): %s: %v, DuckDB %v", msg, got, want)
	}
	if res.Stats.AnsweredBy != "plan" || res.Stats.BytesRead != 0 || res.Schema.Field(0).Name != "n" {
		t.Fatalf("COUNT(*) without WHERE: answered by %q (%s), %d bytes read, column %q; want the plan, 0 bytes, n",
			res.Stats.AnsweredBy, res.Stats.CountNote, res.Stats.BytesRead, res.Schema.Field(0).Name)
	}

	// COUNT of a required column counts rows: from the plan too
	got, res = run("SELECT COUNT(id) AS n, COUNT(*) FROM %s")
	want = duckAnswer(t, db, fmt.Sprintf("SELECT COUNT(id), COUNT(*) FROM %s", from))
	if msg := sameAnswer(got, want); msg != "" || res.Stats.AnsweredBy != "plan" {
		t.Fatalf("COUNT(id), COUNT(*): %s: %v, DuckDB %v, answered by %q", msg, got, want, res.Stats.AnsweredBy)
	}

	wheres := []string{"", "tenant_id = 'tenant-007'", "status = 'error' AND id < 20000", "message IS NULL OR id > 25000",
		"tenant_id IN ('tenant-001', 'tenant-050') OR id < 100", "ts >= TIMESTAMP '2026-01-02 00:00:00'", "id BETWEEN 3000 AND 7000"}
	groupings := [][]string{nil, {"status"}, {"tenant_id"}, {"tenant_id", "status"}}
	// COUNT(*) with a WHERE counts the matching rows without projecting
	// them (connector.Query.CountOnly), on every aggregation site
	for _, where := range wheres[1:] {
		q := "SELECT COUNT(*) AS n FROM %s WHERE " + where
		want := duckAnswer(t, db, fmt.Sprintf(q, from))
		for _, site := range []connector.AggregateSite{connector.AggregateAuto, connector.AggregateHere, connector.AggregateVolume} {
			got, _ := at.run(t, q, sqlexec.Options{AggregateAt: site})
			if msg := sameAnswer(got, want); msg != "" {
				t.Errorf("%s (-aggregateAt %s): %s: %v, DuckDB %v", q, site, msg, got, want)
			}
		}
	}
	aggs := []string{"COUNT(*)", "COUNT(message)", "COUNT(DISTINCT message)", "SUM(id)", "AVG(id)", "MIN(id)", "MAX(id)", "MIN(ts)", "MAX(message)", "MIN(status)"}
	checked := 0
	for i := range 40 {
		where := wheres[r.IntN(len(wheres))]
		groups := groupings[r.IntN(len(groupings))]
		items := append([]string{}, groups...)
		for j := range 1 + r.IntN(3) {
			items = append(items, fmt.Sprintf("%s AS a%d", aggs[r.IntN(len(aggs))], j))
		}
		q := "SELECT " + strings.Join(items, ", ") + " FROM %s"
		if where != "" {
			q += " WHERE " + where
		}
		if len(groups) > 0 {
			q += " GROUP BY " + strings.Join(groups, ", ")
			if i%3 == 0 {
				q += " HAVING COUNT(*) > 20"
			}
			var orders []string
			if i%2 == 0 {
				orders = append(orders, "a0 DESC NULLS LAST")
			}
			for _, g := range groups {
				orders = append(orders, g+" ASC NULLS FIRST")
			}
			q += " ORDER BY " + strings.Join(orders, ", ")
			if i%4 == 1 {
				q += " LIMIT 7 OFFSET 3"
			}
		}
		got, _ := run(q)
		want := duckAnswer(t, db, fmt.Sprintf(q, from))
		if msg := sameAnswer(got, want); msg != "" {
			t.Errorf("%s: %s\nours:   %v\nDuckDB: %v", q, msg, head2(got), head2(want))
		}
		checked++
	}
	// ORDER BY columns without aggregates, NULLs first and last
	for _, q := range []string{
		"SELECT id, message AS m FROM %s WHERE id < 9000 ORDER BY m DESC NULLS FIRST, id LIMIT 25 OFFSET 10",
		"SELECT tenant_id, id FROM %s WHERE status = 'error' ORDER BY tenant_id DESC NULLS LAST, id DESC LIMIT 30",
	} {
		got, _ := run(q)
		want := duckAnswer(t, db, fmt.Sprintf(q, from))
		if msg := sameAnswer(got, want); msg != "" {
			t.Errorf("%s: %s\nours:   %v\nDuckDB: %v", q, msg, head2(got), head2(want))
		}
		checked++
	}
	t.Logf("%d answers agree with DuckDB", checked)
}

// GROUP BYs answered by the volume servers' partial aggregates (AggregateRows,
// merged in the caller) equal the here path's and DuckDB's over the same
// files, deletes applied: random WHEREs (evaluated next to the data, or
// answered exactly by side indexes), GROUP BYs and aggregates over
// columns with NULLs. The volume path answers every file itself (no
// fallback) and moves a few KB; the here path reads the rows.
func TestGroupByPartialsFromTheVolumesEqualTheHerePathAndDuckDB(t *testing.T) {
	at := loadAggregateTable(t)
	r := rand.New(rand.NewPCG(30, 2))
	wheres := []string{"", "tenant_id = 'tenant-007'", "status = 'error' AND id < 20000", "message IS NULL OR id > 25000",
		"tenant_id IN ('tenant-001', 'tenant-050') OR id < 100", "ts >= TIMESTAMP '2026-01-02 00:00:00'", "id BETWEEN 3000 AND 7000",
		"message LIKE 'user%%'"}
	groupings := [][]string{nil, {"status"}, {"tenant_id"}, {"tenant_id", "status"}, {"message"}, {"status", "message"}}
	aggs := []string{"COUNT(*)", "COUNT(message)", "SUM(id)", "AVG(id)", "MIN(id)", "MAX(id)", "MIN(ts)", "MAX(ts)", "MAX(message)", "MIN(status)"}
	volume := sqlexec.Options{AggregateAt: connector.AggregateVolume}
	here := sqlexec.Options{AggregateAt: connector.AggregateHere}
	byVolumes := 0
	for i := range 30 {
		where := wheres[r.IntN(len(wheres))]
		groups := groupings[r.IntN(len(groupings))]
		items := append([]string{}, groups...)
		for j := range 1 + r.IntN(3) {
			items = append(items, fmt.Sprintf("%s AS a%d", aggs[r.IntN(len(aggs))], j))
		}
		if len(groups) == 0 && i%2 == 0 {
			items = append(items, "SUM(id) AS s") // not COUNT(*) alone: that is the plan's
		}
		q := "SELECT " + strings.Join(items, ", ") + " FROM %s"
		if where != "" {
			q += " WHERE " + where
		}
		if len(groups) > 0 {
			q += " GROUP BY " + strings.Join(groups, ", ")
			var orders []string
			for _, g := range groups {
				orders = append(orders, g+" ASC NULLS FIRST")
			}
			q += " ORDER BY " + strings.Join(orders, ", ")
		}
		want := duckAnswer(t, at.db, fmt.Sprintf(q, at.from))
		got, res := at.run(t, q, here)
		if msg := sameAnswer(got, want); msg != "" {
			t.Errorf("here: %s: %s\nours:   %v\nDuckDB: %v", q, msg, head2(got), head2(want))
		}
		if res.Stats.AnsweredBy != "scan" || res.Stats.AggregateVolumeFiles != 0 {
			t.Errorf("%s with -aggregateAt here: answered by %q, %d files on the volumes", q, res.Stats.AnsweredBy, res.Stats.AggregateVolumeFiles)
		}
		got, res = at.run(t, q, volume)
		if msg := sameAnswer(got, want); msg != "" {
			t.Errorf("volume partials: %s: %s\nours:   %v\nDuckDB: %v", q, msg, head2(got), head2(want))
		}
		st := res.Stats
		if st.Files == 0 { // the plan pruned every file: nothing to aggregate
			if st.AnsweredBy != "plan" || st.BytesRead != 0 {
				t.Errorf("%s: no file planned, answered by %q reading %d bytes; want the plan, none", q, st.AnsweredBy, st.BytesRead)
			}
			continue
		}
		byVolumes++
		if st.AnsweredBy != "volume partial aggregates" || st.AggregateVolumeFallbacks != 0 || st.AggregateHereFiles != 0 || st.AggregateVolumeFiles == 0 {
			t.Errorf("%s: answered by %q (%s), %d files on the volumes, %d here (%s), %d fallbacks (%s)", q, st.AnsweredBy, st.AggregateNote,
				st.AggregateVolumeFiles, st.AggregateHereFiles, st.AggregateHereReason, st.AggregateVolumeFallbacks, st.AggregateFallbackReason)
		}
		// no row is read here (footers may be, once); a few groups (≤ 500 a
		// file, 3 files) are a few KB
		if st.RowsRead != 0 || st.BytesAggregateVolume <= 0 || (!slices.Contains(groups, "message") && st.BytesAggregateVolume > 64<<10) {
			t.Errorf("%s: %d rows read here, %d bytes of partial states: want none, and under 64 KiB for a few groups", q, st.RowsRead, st.BytesAggregateVolume)
		}
	}
	if byVolumes < 15 {
		t.Errorf("only %d of 30 statements planned a file for the volumes", byVolumes)
	}
	t.Logf("%d statements answered by the volumes' partial aggregates, all 30 by the here path, equal to DuckDB", byVolumes)
	// COUNT(DISTINCT) has no partial state: read and aggregated here
	q := "SELECT status, COUNT(DISTINCT message) AS d FROM %s GROUP BY status ORDER BY status"
	got, res := at.run(t, q, volume)
	if msg := sameAnswer(got, duckAnswer(t, at.db, fmt.Sprintf(q, at.from))); msg != "" || res.Stats.AnsweredBy != "scan" {
		t.Errorf("%s: %s, answered by %q", q, msg, res.Stats.AnsweredBy)
	}
}

// aggregateTable is the demo table of the aggregate tests on a real
// cluster (30,000 rows in 3 files of 5,000-row row groups, half indexed,
// position deletes of scattered ids and a range crossing row groups), a
// DuckDB over its data files with the deletes as a predicate (from), and
// a connector to it.
type aggregateTable struct {
	name, from string
	db         *sql.DB
	conn       *connector.Connector
	r          *rand.Rand
}

func loadAggregateTable(t *testing.T) *aggregateTable {
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 30_000, 3, 5_000, demo.IndexedHalf
	const name = "duck_agg.events"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	files := harness.DownloadTable(t, c, name)

	// merge-on-read deletes: scattered ids and a range crossing row groups
	r := rand.New(rand.NewPCG(30, 1))
	var deleted []int64
	seen := map[int64]bool{}
	for len(deleted) < 300 {
		if id := r.Int64N(30_000); !seen[id] {
			seen[id] = true
			deleted = append(deleted, id)
		}
	}
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"duck_agg", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []iceberg.BooleanExpression{
		iceberg.IsIn(iceberg.Reference("id"), deleted...),
		iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(4000)), iceberg.LessThan(iceberg.Reference("id"), int64(6500))),
	} {
		if err := tx.Delete(ctx, f, nil); err != nil {
			t.Fatalf("delete %s: %v", f, err)
		}
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(deleted))
	for i, id := range deleted {
		ids[i] = fmt.Sprint(id)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	from := "(SELECT * FROM read_parquet(['" + strings.Join(files, "', '") + "']) WHERE id NOT IN (" + strings.Join(ids, ", ") +
		") AND NOT (id >= 4000 AND id < 6500))"

	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return &aggregateTable{name: name, db: db, from: from, conn: conn, r: r}
}

// run answers q (its %s the table) with o.
func (at *aggregateTable) run(t *testing.T, q string, o sqlexec.Options) ([][]any, *sqlexec.Result) {
	t.Helper()
	st, err := sqlstmt.Parse(fmt.Sprintf(q, at.name))
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var rows [][]any
	res, err := sqlexec.Run(context.Background(), at.conn, st, o, func(rec arrow.RecordBatch) error {
		rows = append(rows, arrowRows(rec)...)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows, res
}

func head2(v [][]any) [][]any { return v[:min(len(v), 6)] }

func arrowRows(rec arrow.RecordBatch) [][]any {
	var rows [][]any
	for i := 0; i < int(rec.NumRows()); i++ {
		row := make([]any, rec.NumCols())
		for j := range row {
			col := rec.Column(j)
			if col.IsNull(i) {
				continue
			}
			switch x := col.(type) {
			case *array.Int64:
				row[j] = x.Value(i)
			case *array.Float64:
				row[j] = x.Value(i)
			case *array.String:
				row[j] = x.Value(i)
			case *array.Timestamp:
				row[j] = x.Value(i).ToTime(arrow.Microsecond).UTC()
			default:
				row[j] = fmt.Sprintf("unexpected %s", col.DataType())
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func duckAnswer(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rs, err := db.Query(q)
	if err != nil {
		t.Fatalf("DuckDB: %s: %v", q, err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out [][]any
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range row {
			switch x := v.(type) {
			case int32:
				row[i] = int64(x)
			case *big.Int:
				row[i] = x.Int64()
			case time.Time:
				row[i] = x.UTC()
			}
		}
		out = append(out, row)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameAnswer(got, want [][]any) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("row %d: %d columns, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			g, w := got[i][j], want[i][j]
			if gf, ok := g.(float64); ok {
				if wf, ok := w.(float64); ok && math.Abs(gf-wf) <= 1e-9*math.Max(1, math.Abs(wf)) {
					continue
				}
			}
			if gt, ok := g.(time.Time); ok {
				if wt, ok := w.(time.Time); ok && gt.Equal(wt) {
					continue
				}
			}
			if g != w {
				return fmt.Sprintf("row %d column %d: %v (%T), want %v (%T)", i, j, g, g, w, w)
			}
		}
	}
	return ""
}
