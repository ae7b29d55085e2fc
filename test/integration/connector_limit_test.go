package integration

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

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
// (one worker, no read-ahead), the same rows with parallel workers; the
// unlimited answer is iceberg-go's scan of the snapshot.
func TestALimitStopsReadingEarlyAndReturnsTheFirstMatchingRowsWithDeletesAndAResidual(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	// two files of ten row groups, every 7th of the first 5000 ids deleted
	// (merge-on-read position deletes)
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 20_000, 2, 1000, demo.IndexedAll
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
	if len(all) < 1000 || full.Stats.RowGroups < 20 {
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
		t.Logf("workers %d: LIMIT 10 read %d row groups, %d bytes (full read: %d row groups, %d bytes)", o.Workers, res.Stats.RowGroups, res.Stats.BytesRead, full.Stats.RowGroups, full.Stats.BytesRead)
		res.Release()
	}
}
