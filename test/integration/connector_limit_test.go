package integration

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// inOrder renders a result's rows in the order given, columns sorted by
// name within a row (iceberg-go returns columns in schema order).
func inOrder(recs []arrow.RecordBatch) []string {
	var out []string
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				parts = append(parts, rec.Schema().Field(c).Name+"="+rec.Column(c).ValueStr(r))
			}
			sort.Strings(parts)
			out = append(out, strings.Join(parts, "|"))
		}
	}
	return out
}

// A LIMIT stops the read early and returns exactly the first rows of the
// unlimited answer, in plan order, with position deletes and a residual
// predicate in play: one row group read when it holds enough matching rows
// (one worker, no read-ahead), and of it only the first rows decoded; the
// same rows with parallel workers; LIMITs that take several windows of a
// row group and several row groups return their first rows too; the
// unlimited answer is iceberg-go's scan of the snapshot.
func TestALimitStopsReadingEarlyAndReturnsTheFirstMatchingRowsWithDeletesAndAResidual(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	// two files of five row groups (8192 rows, larger than a LIMIT's
	// largest first window), every 7th of the first 5000 ids deleted
	// (merge-on-read position deletes)
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 80_000, 2, 8192, demo.IndexedAll
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "limit_it.events", Spec: spec, Replace: true}); err != nil {
		t.Fatal(err)
	}
	tbl := mergeOnRead(t, c, "limit_it", "events")
	var deleted []int64
	for id := int64(3); id < 5000; id += 7 {
		deleted = append(deleted, id)
	}
	tbl = deleteWhere(t, tbl, iceberg.IsIn(iceberg.Reference("id"), deleted...))

	const where = "status <> 'error' AND tenant_id >= 'tenant-010'"
	sel := []string{"id", "tenant_id", "status"}
	want := scanRows(t, tbl, tbl.CurrentSnapshot().SnapshotID, iceberg.NewAnd(iceberg.NotEqualTo(iceberg.Reference("status"), "error"),
		iceberg.GreaterThanEqual(iceberg.Reference("tenant_id"), "tenant-010")), sel)
	query := func(o connector.Options, limit int64) *connector.Result {
		t.Helper()
		o.Endpoints, o.Force, o.NoFallback, o.Mode = c.Endpoints(), true, true, connector.PageAware
		conn, err := connector.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		res, err := conn.Query(ctx, connector.Query{Table: "limit_it.events", Where: where, Select: sel, Limit: limit})
		if err != nil {
			t.Fatalf("LIMIT %d: %v", limit, err)
		}
		if !res.Stats.Pushdown {
			t.Fatalf("LIMIT %d not pushed down: %s", limit, res.Stats.FallbackReason)
		}
		return res
	}
	full := query(connector.Options{}, 0)
	defer full.Release()
	all := inOrder(full.Records)
	if got := rowsOf(t, full.Schema, full.Records); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the unlimited read returns %d rows, iceberg-go's scan %d: %s", len(got), len(want), firstDiff(got, want))
	}
	if len(all) < 20_000 || full.Stats.RowGroups < 10 {
		t.Fatalf("the table is too small to show an early stop: %d rows in %d row groups", len(all), full.Stats.RowGroups)
	}
	for _, o := range []connector.Options{{Workers: 1, MaxBufferBytes: 1}, {}} {
		res := query(o, 10)
		got := inOrder(res.Records)
		if strings.Join(got, "\n") != strings.Join(all[:10], "\n") {
			t.Errorf("workers %d: LIMIT 10 returns\n%s\nwant the first 10 rows of the unlimited read\n%s", o.Workers, strings.Join(got, "\n"), strings.Join(all[:10], "\n"))
		}
		if o.Workers == 1 && (res.Stats.RowGroups != 1 || 5*res.Stats.BytesRead > full.Stats.BytesRead) {
			t.Errorf("LIMIT 10 with one worker read %d row groups and %d bytes; want 1 row group, at most a fifth of the %d bytes of the full read",
				res.Stats.RowGroups, res.Stats.BytesRead, full.Stats.BytesRead)
		}
		// the first row group's first window holds 10 matching rows:
		// decoding stops there, in one row group only
		if res.Stats.RowsDecoded <= 0 || res.Stats.RowsDecoded >= spec.RowGroupRows {
			t.Errorf("workers %d: LIMIT 10 decoded %d rows; want fewer than the %d of one row group", o.Workers, res.Stats.RowsDecoded, spec.RowGroupRows)
		}
		t.Logf("workers %d: LIMIT 10 read %d row groups, %d bytes, decoded %d rows (full read: %d row groups, %d bytes, %d rows)",
			o.Workers, res.Stats.RowGroups, res.Stats.BytesRead, res.Stats.RowsDecoded, full.Stats.RowGroups, full.Stats.BytesRead, full.Stats.RowsDecoded)
		res.Release()
	}
	// 3000: past the first window (4096 rows, ~2800 matching); 7000 and
	// 12000: past the first row groups
	for _, limit := range []int64{1, 150, 3000, 7000, 12000} {
		res := query(connector.Options{}, limit)
		if got := inOrder(res.Records); strings.Join(got, "\n") != strings.Join(all[:limit], "\n") {
			t.Errorf("LIMIT %d returns %d rows, not the first %d rows of the unlimited read: %s", limit, len(got), limit, firstDiff(got, all[:limit]))
		}
		if res.Stats.RowsDecoded >= full.Stats.RowsDecoded {
			t.Errorf("LIMIT %d decoded %d rows, as many as the full read", limit, res.Stats.RowsDecoded)
		}
		res.Release()
	}
	// a list column decodes window by window too, a window's rows whole
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true, Mode: connector.PageAware})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	limitAgreesWithTheUnlimitedRead(t, conn, tbl, "limit_it.events", where, iceberg.NewAnd(iceberg.NotEqualTo(iceberg.Reference("status"), "error"),
		iceberg.GreaterThanEqual(iceberg.Reference("tenant_id"), "tenant-010")), []string{"id", "tags", "status"})
}

// A LIMIT over tables with v2 position deletes, v3 deletion vectors, both
// mixed, and equality deletes, with a residual predicate, returns exactly
// the first rows of the unlimited read (itself iceberg-go's scan), in plan
// order, for LIMITs ending inside a row group's first window, past it, and
// past several row groups; it decodes fewer rows than the unlimited read.
func TestALimitOverEveryKindOfDeleteReturnsTheFirstMatchingRows(t *testing.T) {
	c := sharedCluster(t)
	tables := sharedDeleteTables(t, c)
	ctx := context.Background()
	sel := []string{"id", "part", "val", "name"}
	notN5 := iceberg.NotEqualTo(iceberg.Reference("name"), "n5")
	cases := []struct {
		where  string
		filter iceberg.BooleanExpression
	}{
		// a residual in row groups the plan keeps whole
		{"name <> 'n5' AND (val IS NULL OR val >= 30)", iceberg.NewAnd(notN5,
			iceberg.NewOr(iceberg.IsNull(iceberg.Reference("val")), iceberg.GreaterThanEqual(iceberg.Reference("val"), int64(30))))},
		// the files are written in id order: matches start inside the first row groups
		{"id >= 400 AND name <> 'n5'", iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(400)), notN5)},
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true, Mode: connector.PageAware})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, name := range []string{"del_it.v2pos", "del_it.v3dv", "del_it.mixed", "del_it.equality"} {
		for _, tc := range cases {
			limitAgreesWithTheUnlimitedRead(t, conn, tables[name], name, tc.where, tc.filter, sel)
		}
	}
}

// limitAgreesWithTheUnlimitedRead checks LIMITs of one query against the
// first rows of its unlimited read, and that against iceberg-go's scan.
func limitAgreesWithTheUnlimitedRead(t *testing.T, conn *connector.Connector, tbl *table.Table, name, where string, filter iceberg.BooleanExpression, sel []string) {
	t.Helper()
	ctx := context.Background()
	query := func(limit int64) *connector.Result {
		t.Helper()
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: where, Select: sel, Limit: limit})
		if err != nil {
			t.Fatalf("%s LIMIT %d: %v", name, limit, err)
		}
		if !res.Stats.Pushdown {
			t.Fatalf("%s LIMIT %d not pushed down: %s", name, limit, res.Stats.FallbackReason)
		}
		return res
	}
	full := query(0)
	all := inOrder(full.Records)
	want := scanRows(t, tbl, tbl.CurrentSnapshot().SnapshotID, filter, sel)
	if got := rowsOf(t, full.Schema, full.Records); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: the unlimited read returns %d rows, iceberg-go's scan %d: %s", name, len(got), len(want), firstDiff(got, want))
	}
	full.Release()
	for _, limit := range []int64{1, 10, 40, 300, 1000, int64(len(all)) + 5} {
		res := query(limit)
		n := min(limit, int64(len(all)))
		if got := inOrder(res.Records); strings.Join(got, "\n") != strings.Join(all[:n], "\n") {
			t.Errorf("%s: LIMIT %d returns %d rows, not the first %d of the unlimited read: %s", name, limit, len(got), n, firstDiff(got, all[:n]))
		}
		if limit <= 40 && res.Stats.RowsDecoded >= full.Stats.RowsDecoded {
			t.Errorf("%s: LIMIT %d decoded %d rows, as many as the unlimited read", name, limit, res.Stats.RowsDecoded)
		}
		res.Release()
	}
	t.Logf("%s where %s: %d matching rows; the unlimited read decodes %d rows", name, where, len(all), full.Stats.RowsDecoded)
}

// A LIMIT over row groups a side index narrowed to many of their rows (a
// bitmap on status: a fifth of every row group, in hundreds of ranges)
// decodes windows of those rows, not whole row groups, and returns exactly
// the first rows of the unlimited read — read through the pages (the
// volumes' row reads off) and with them on.
func TestALimitOverRowsASideIndexNarrowedDecodesWindowsOfThem(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 40_000, 1, 8192, demo.IndexedNone
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "limit_it.side", Spec: spec, Replace: true}); err != nil {
		t.Fatal(err)
	}
	indexCreate(t, c, "limit_it.side", "status", "bitmap")
	tbl := loadTable(t, c, "limit_it.side")
	const where = "status = 'error'"
	sel := []string{"id", "tenant_id", "status"}
	want := scanRows(t, tbl, tbl.CurrentSnapshot().SnapshotID, iceberg.EqualTo(iceberg.Reference("status"), "error"), sel)
	for _, noVolumeRows := range []bool{true, false} {
		conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true, Mode: connector.PageAware, NoVolumeRows: noVolumeRows, Workers: 1, MaxBufferBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		query := func(limit int64) *connector.Result {
			t.Helper()
			res, err := conn.Query(ctx, connector.Query{Table: "limit_it.side", Where: where, Select: sel, Limit: limit})
			if err != nil {
				t.Fatalf("LIMIT %d: %v", limit, err)
			}
			if !res.Stats.Pushdown {
				t.Fatalf("LIMIT %d not pushed down: %s", limit, res.Stats.FallbackReason)
			}
			t.Logf("no volume rows %v, LIMIT %d: %d row groups (%d exact, %d from volumes), %d rows decoded, %d bytes", noVolumeRows, limit,
				res.Stats.RowGroups, res.Stats.ExactRowGroups, res.Stats.VolumeRowGroups, res.Stats.RowsDecoded, res.Stats.BytesRead)
			if res.Stats.ExactRowGroups > int64(res.Stats.RowGroups) || res.Stats.VolumeRowGroups > res.Stats.ExactRowGroups {
				t.Errorf("LIMIT %d: %d row groups read, %d counted exact, %d from volumes: a row group counts once, a volume's only when exact",
					limit, res.Stats.RowGroups, res.Stats.ExactRowGroups, res.Stats.VolumeRowGroups)
			}
			return res
		}
		full := query(0)
		all := inOrder(full.Records)
		if got := rowsOf(t, full.Schema, full.Records); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("no volume rows %v: the unlimited read returns %d rows, iceberg-go's scan %d: %s", noVolumeRows, len(got), len(want), firstDiff(got, want))
		}
		full.Release()
		for _, limit := range []int64{1, 10, 500, 2500, int64(len(all)) + 5} {
			res := query(limit)
			n := min(limit, int64(len(all)))
			if got := inOrder(res.Records); strings.Join(got, "\n") != strings.Join(all[:n], "\n") {
				t.Errorf("no volume rows %v: LIMIT %d returns %d rows, not the first %d of the unlimited read: %s", noVolumeRows, limit, len(got), n, firstDiff(got, all[:n]))
			}
			if limit == 10 && noVolumeRows && (res.Stats.RowsDecoded <= 0 || res.Stats.RowsDecoded >= spec.RowGroupRows) {
				t.Errorf("LIMIT 10 decoded %d rows; want a window, fewer than the %d of one row group", res.Stats.RowsDecoded, spec.RowGroupRows)
			}
			res.Release()
		}
	}
}

// A LIMIT answered by a side index whose first files' matches are almost
// all deleted (position deletes): the volume cuts the answers to the first
// positions and skips the probes after them, the deleted rows leave the
// limit short, and the plan still holds the LIMIT's rows (a file cut short
// asked again whole, a skipped file planned without its index), so every
// LIMIT returns exactly the first rows of the unlimited read.
func TestALimitWhoseIndexedFirstMatchesAreDeletedStillReturnsItsRows(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	tbl := createDeleteTable(t, c, "limit_it", "skipped", 2)
	tbl = appendRows(t, tbl, 0, 15000) // one file a part, 5,000 rows each
	indexCreate(t, c, "limit_it.skipped", "id", "btree")
	// every part keeps only its first few ids: 0..11 live, 14,988 deleted
	tbl = deleteWhere(t, mergeOnRead(t, c, "limit_it", "skipped"), iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(12)))
	const where = "id >= 0"
	sel := []string{"id", "part", "name"}
	want := scanRows(t, tbl, tbl.CurrentSnapshot().SnapshotID, iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(0)), sel)
	if len(want) != 12 {
		t.Fatalf("iceberg-go's scan after the deletes: %d rows, want 12", len(want))
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true, Mode: connector.PageAware})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	full, err := conn.Query(ctx, connector.Query{Table: "limit_it.skipped", Where: where, Select: sel})
	if err != nil {
		t.Fatal(err)
	}
	all := inOrder(full.Records)
	if got := rowsOf(t, full.Schema, full.Records); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the unlimited read returns %d rows, iceberg-go's scan %d: %s", len(got), len(want), firstDiff(got, want))
	}
	full.Release()
	for _, limit := range []int64{1, 3, 4, 5, 10, 12, 20} {
		res, err := conn.Query(ctx, connector.Query{Table: "limit_it.skipped", Where: where, Select: sel, Limit: limit})
		if err != nil {
			t.Fatalf("LIMIT %d: %v", limit, err)
		}
		n := min(limit, int64(len(all)))
		if got := inOrder(res.Records); strings.Join(got, "\n") != strings.Join(all[:n], "\n") {
			t.Errorf("LIMIT %d returns %d rows, not the first %d of the unlimited read: %s", limit, len(got), n, firstDiff(got, all[:n]))
		}
		res.Release()
	}
}
