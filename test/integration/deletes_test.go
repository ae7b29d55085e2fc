package integration

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// deleteSchema is the schema of the delete test tables: rows carry a
// unique id, a partition key, a value and a name.
func deleteSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "part", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
}

var deleteParts = []string{"a", "b", "c"}

// deleteRows builds rows ids [from, to), part by id % 3, val = id * 10
// (null every 17th), name "n<id>".
func deleteRows(t *testing.T, from, to int64) arrow.Table {
	t.Helper()
	ids := make([]int64, 0, to-from)
	for id := from; id < to; id++ {
		ids = append(ids, id)
	}
	return deleteRowsOf(t, ids)
}

// deleteRowsOf builds the rows of ids, in the order given.
func deleteRowsOf(t *testing.T, ids []int64) arrow.Table {
	t.Helper()
	asch, err := table.SchemaToArrowSchema(deleteSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(deleteParts[id%3])
		if id%17 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(id * 10)
		}
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asch, []arrow.RecordBatch{rec})
}

// createDeleteTable creates ns.name partitioned by identity(part), with
// merge-on-read deletes and small row groups (several per file).
func createDeleteTable(t *testing.T, c *harness.Cluster, ns, name string, formatVersion int) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{ns}, nil)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "part", Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, deleteSchema(), catalog.WithPartitionSpec(&spec),
		catalog.WithProperties(iceberg.Properties{
			"format-version":                 fmt.Sprint(formatVersion),
			table.WriteDeleteModeKey:         table.WriteModeMergeOnRead,
			"write.parquet.row-group-limit":  "400",
			"write.parquet.page-row-limit":   "100",
			"write.metadata.metrics.default": "full",
		}))
	if err != nil {
		t.Fatalf("create %s.%s: %v", ns, name, err)
	}
	return tbl
}

func appendRows(t *testing.T, tbl *table.Table, from, to int64) *table.Table {
	t.Helper()
	at := deleteRows(t, from, to)
	defer at.Release()
	out, err := tbl.AppendTable(context.Background(), at, 1<<20, nil)
	if err != nil {
		t.Fatalf("append [%d, %d): %v", from, to, err)
	}
	return out
}

// mergeOnRead loads ns.name and sets its delete mode to merge-on-read
// (deletes then write position deletes or deletion vectors).
func mergeOnRead(t *testing.T, c *harness.Cluster, ns, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func deleteWhere(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) *table.Table {
	t.Helper()
	ctx := context.Background()
	tx := tbl.NewTransaction()
	if err := tx.Delete(ctx, filter, nil); err != nil {
		t.Fatalf("delete %s: %v", filter, err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatalf("commit delete %s: %v", filter, err)
	}
	return out
}

// randomIDs picks n distinct ids in [from, to).
func randomIDs(r *rand.Rand, from, to int64, n int) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for len(out) < n {
		id := from + r.Int64N(to-from)
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func idIn(ids []int64) iceberg.BooleanExpression {
	return iceberg.IsIn(iceberg.Reference("id"), ids...)
}

// positionDeleteTable writes a table whose snapshots carry deletes made by
// iceberg-go's merge-on-read Delete: position-delete files on v2, deletion
// vectors on v3, both when upgradeAfter > 0 upgrades v2 to v3 after that
// many deletes.
func positionDeleteTable(t *testing.T, c *harness.Cluster, ns, name string, formatVersion, upgradeAfter int) *table.Table {
	t.Helper()
	r := rand.New(rand.NewPCG(7, uint64(formatVersion)))
	tbl := createDeleteTable(t, c, ns, name, formatVersion)
	tbl = appendRows(t, tbl, 0, 3000)
	tbl = appendRows(t, tbl, 3000, 6000)
	steps := []iceberg.BooleanExpression{
		idIn(randomIDs(r, 0, 6000, 600)), // ~10% scattered
		iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(1200)), iceberg.LessThan(iceberg.Reference("id"), int64(2700))), // whole row groups
		iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("part"), "b"), iceberg.LessThan(iceberg.Reference("id"), int64(4500))),
	}
	for i, f := range steps {
		if upgradeAfter > 0 && i == upgradeAfter {
			tx := tbl.NewTransaction()
			if err := tx.UpgradeFormatVersion(3); err != nil {
				t.Fatalf("upgrade to v3: %v", err)
			}
			var err error
			if tbl, err = tx.Commit(context.Background()); err != nil {
				t.Fatalf("commit upgrade to v3: %v", err)
			}
		}
		tbl = deleteWhere(t, tbl, f)
		if i == 0 {
			tbl = appendRows(t, tbl, 6000, 7000)
		}
	}
	return tbl
}

// equalityDeleteTable writes equality deletes with iceberg-go's
// WriteEqualityDeletes across partitions and sequence numbers: keys deleted
// before a row is re-inserted must not delete the new row.
func equalityDeleteTable(t *testing.T, c *harness.Cluster, ns, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl := createDeleteTable(t, c, ns, name, 2)
	tbl = appendRows(t, tbl, 0, 2000)
	eqDelete := func(tbl *table.Table, ids []int64) *table.Table {
		t.Helper()
		asch := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})},
			{Name: "part", Type: arrow.BinaryTypes.String, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2"})},
		}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
		defer b.Release()
		for _, id := range ids {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(deleteParts[id%3])
		}
		rec := b.NewRecordBatch()
		tx := tbl.NewTransaction()
		var recs iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
		files, err := tx.WriteEqualityDeletes(ctx, []int{1, 2}, recs)
		rec.Release()
		if err != nil {
			t.Fatalf("write equality deletes: %v", err)
		}
		if err := tx.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
			t.Fatalf("row delta: %v", err)
		}
		out, err := tx.Commit(ctx)
		if err != nil {
			t.Fatalf("commit equality deletes: %v", err)
		}
		return out
	}
	r := rand.New(rand.NewPCG(11, 2))
	first := randomIDs(r, 0, 2000, 200)
	tbl = eqDelete(tbl, first)
	// Re-insert some deleted keys: newer rows survive the older delete.
	reinserted := first[:20]
	asch, _ := table.SchemaToArrowSchema(deleteSchema(), nil, true, false)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	for _, id := range reinserted {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(deleteParts[id%3])
		b.Field(2).(*array.Int64Builder).Append(-id)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("again%d", id))
	}
	rec := b.NewRecordBatch()
	b.Release()
	again := array.NewTableFromRecords(asch, []arrow.RecordBatch{rec})
	rec.Release()
	var err error
	if tbl, err = tbl.AppendTable(ctx, again, 1<<20, nil); err != nil {
		t.Fatalf("re-insert: %v", err)
	}
	again.Release()
	tbl = appendRows(t, tbl, 2000, 3000)
	// A second delete: partition "a" keys only, some of them re-inserted ones.
	var second []int64
	for _, id := range append(randomIDs(r, 0, 3000, 300), reinserted...) {
		if id%3 == 0 {
			second = append(second, id)
		}
	}
	return eqDelete(tbl, second)
}

var deleteTablesOnce sync.Once
var deleteTables map[string]*table.Table

// sharedDeleteTables writes the delete test tables into the shared cluster
// once.
func sharedDeleteTables(t *testing.T, c *harness.Cluster) map[string]*table.Table {
	t.Helper()
	deleteTablesOnce.Do(func() {
		deleteTables = map[string]*table.Table{
			"del_it.v2pos":    positionDeleteTable(t, c, "del_it", "v2pos", 2, 0),
			"del_it.v3dv":     positionDeleteTable(t, c, "del_it", "v3dv", 3, 0),
			"del_it.mixed":    positionDeleteTable(t, c, "del_it", "mixed", 2, 2),
			"del_it.equality": equalityDeleteTable(t, c, "del_it", "equality"),
		}
	})
	if deleteTables == nil {
		t.Fatal("delete test tables were not written (see the first failure)")
	}
	return deleteTables
}

// scanRows is iceberg-go's own answer for a snapshot and filter.
func scanRows(t *testing.T, tbl *table.Table, snapshot int64, where iceberg.BooleanExpression, sel []string) []string {
	t.Helper()
	opts := []table.ScanOption{table.WithSnapshotID(snapshot), table.WithSelectedFields(sel...)}
	if where != nil {
		opts = append(opts, table.WithRowFilter(where))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("iceberg-go scan of snapshot %d: %v", snapshot, err)
	}
	defer at.Release()
	return rowsOf(t, at.Schema(), harness.TableRecords(at))
}

type deleteQuery struct {
	sql   string
	where iceberg.BooleanExpression
}

var deleteQueries = []deleteQuery{
	{"", nil},
	{"id >= 1000 AND id < 3000", iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(1000)), iceberg.LessThan(iceberg.Reference("id"), int64(3000)))},
	{"part = 'b'", iceberg.EqualTo(iceberg.Reference("part"), "b")},
	{"val IS NULL OR id < 100", iceberg.NewOr(iceberg.IsNull(iceberg.Reference("val")), iceberg.LessThan(iceberg.Reference("id"), int64(100)))},
}

// checkSnapshotsAgree compares, for every snapshot of tbl and every query,
// the connector's rows through pushdown (with the plan's delete masks) with
// iceberg-go's scan of that snapshot.
func checkSnapshotsAgree(t *testing.T, c *harness.Cluster, name string, tbl *table.Table, opts connector.Options) {
	t.Helper()
	ctx := context.Background()
	opts.Endpoints = c.Endpoints()
	conn, err := connector.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sel := []string{"id", "part", "val", "name"}
	for _, s := range tbl.Metadata().Snapshots() {
		for _, q := range deleteQueries {
			want := scanRows(t, tbl, s.SnapshotID, q.where, sel)
			res, err := conn.Query(ctx, connector.Query{Table: name, Snapshot: s.SnapshotID, Where: q.sql, Select: sel})
			if err != nil {
				t.Fatalf("%s snapshot %d WHERE %q: %v", name, s.SnapshotID, q.sql, err)
			}
			got := rowsOf(t, res.Schema, res.Records)
			res.Release()
			if !res.Stats.Pushdown {
				t.Fatalf("%s snapshot %d WHERE %q: read without pushdown (%s)", name, s.SnapshotID, q.sql, res.Stats.FallbackReason)
			}
			if len(got) != len(want) || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s snapshot %d WHERE %q: pushdown returned %d rows, iceberg-go %d\n%s", name, s.SnapshotID, q.sql, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(got, want []string) string {
	gs, ws := map[string]bool{}, map[string]bool{}
	for _, g := range got {
		gs[g] = true
	}
	for _, w := range want {
		ws[w] = true
	}
	var out []string
	for _, g := range got {
		if !ws[g] && len(out) < 5 {
			out = append(out, "extra:   "+g)
		}
	}
	for _, w := range want {
		if !gs[w] && len(out) < 10 {
			out = append(out, "missing: "+w)
		}
	}
	return strings.Join(out, "\n")
}

// Every snapshot of tables with v2 position deletes, v3 deletion vectors,
// both mixed, and equality deletes reads through pushdown exactly as
// iceberg-go's scan reads it, in page-aware and row-group mode.
func TestDeletesThroughPushdownAgreeWithIcebergGoAtEverySnapshot(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	c := sharedCluster(t)
	tables := sharedDeleteTables(t, c)
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for mode, o := range map[string]connector.Options{
			"page-aware": {Mode: connector.PageAware, Force: true, NoFallback: true},
			"row-group":  {Mode: connector.RowGroup, Force: true, NoFallback: true},
		} {
			t.Run(name+"/"+mode, func(t *testing.T) { checkSnapshotsAgree(t, c, name, tables[name], o) })
		}
	}
}

// Plans over tables with deletes carry the deleted positions, prune row
// groups whose rows are all deleted, report delete stats and hit the
// bitmap caches on the second plan.
func TestPlansCarryDeleteMasksAndReportDeleteStats(t *testing.T) {
	c := sharedCluster(t)
	tables := sharedDeleteTables(t, c)
	ctx := context.Background()
	for _, name := range []string{"del_it.v2pos", "del_it.v3dv", "del_it.equality"} {
		req := &pushdown_pb.ParquetPushdownRequest{Table: name}
		first, err := c.Catalog(t).Plan(ctx, req)
		if err != nil {
			t.Fatalf("plan %s: %v", name, err)
		}
		st := first.GetStats()
		if st.GetDeleteFilesApplied() == 0 || st.GetRowsDeleted() == 0 {
			t.Fatalf("%s: stats report %d delete files applied, %d rows deleted", name, st.GetDeleteFilesApplied(), st.GetRowsDeleted())
		}
		masked := 0
		for _, rg := range first.GetRowGroups() {
			if len(rg.GetDeletedPositions()) > 0 {
				masked++
			}
		}
		if masked == 0 {
			t.Fatalf("%s: no planned row group carries deleted positions", name)
		}
		second, err := c.Catalog(t).Plan(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if second.GetStats().GetDeleteBitmapCacheHits() == 0 || second.GetStats().GetDeleteBitmapCacheMisses() != 0 {
			t.Fatalf("%s: second plan: %d cache hits, %d misses; want hits only", name, second.GetStats().GetDeleteBitmapCacheHits(), second.GetStats().GetDeleteBitmapCacheMisses())
		}
		if second.GetStats().GetRowsDeleted() != st.GetRowsDeleted() {
			t.Fatalf("%s: rows deleted changed between plans: %d then %d", name, st.GetRowsDeleted(), second.GetStats().GetRowsDeleted())
		}
		t.Logf("%s: %d delete files applied, %d rows deleted, %d row groups with masks; second plan %d cache hits",
			name, st.GetDeleteFilesApplied(), st.GetRowsDeleted(), masked, second.GetStats().GetDeleteBitmapCacheHits())
	}
	// ids [1200, 2700) were deleted, which covers whole row groups of 400
	// rows: the deletes tier prunes them.
	resp, err := c.Catalog(t).Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: "del_it.v2pos"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range resp.GetStats().GetTiers() {
		if ts.GetTier() == "deletes" && ts.GetRowGroupsPruned() == 0 {
			t.Fatalf("del_it.v2pos: the deletes tier pruned no row group although whole row groups are deleted")
		}
	}
	_ = tables
}
