package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// On a table written by iceberg-go's own writer (large pages, no page
// index), with a btree on id and position deletes, point lookups, IN lists
// and ranges decode only the wanted rows — of whole chunks with the btree
// alone, of the pages the side page_index locates with it — and return
// exactly iceberg-go's rows.
func TestLookupsDecodingOnlyTheWantedRowsOfLargePagesReturnIcebergGosRows(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	tbl, ids := createUnindexedTable(t, c, "sparse_it", "events", 20000, "write.parquet.row-group-limit", "4000",
		"format-version", "2", table.WriteDeleteModeKey, table.WriteModeMergeOnRead)
	const name = "sparse_it.events"
	sel := []string{"id", "part", "val", "name"}
	createIndex := func(col, kind string) {
		if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
			"-table", name, "-column", col, "-kind", kind, "-wait"); err != nil {
			t.Fatalf("index create %s(%s): %v\n%s%s", kind, col, err, out, errOut)
		}
	}
	createIndex("id", "btree")
	r := rand.New(rand.NewPCG(17, 23))
	deleted := randomIDs(r, 0, 20000, 300)
	tbl = deleteWhere(t, tbl, idIn(deleted))
	snap := tbl.CurrentSnapshot().SnapshotID

	var in, inDel []string
	var inLits, inDelLits []int64
	for _, id := range randomIDs(r, 0, 20000, 40) {
		in, inLits = append(in, fmt.Sprint(id)), append(inLits, id)
	}
	for _, id := range append(deleted[:10:10], ids[0], ids[3999], ids[4000], ids[19999], 25000) {
		inDel, inDelLits = append(inDel, fmt.Sprint(id)), append(inDelLits, id)
	}
	id := iceberg.Reference("id")
	queries := []struct {
		sql    string
		where  iceberg.BooleanExpression
		sparse bool // every planned row group's columns decode sparsely (with at least one row group)
	}{
		{fmt.Sprintf("id = %d", ids[1234]), iceberg.EqualTo(id, ids[1234]), true},
		{fmt.Sprintf("id = %d", ids[0]), iceberg.EqualTo(id, ids[0]), true},         // a row group's first row
		{fmt.Sprintf("id = %d", ids[19999]), iceberg.EqualTo(id, ids[19999]), true}, // the last row
		{fmt.Sprintf("id = %d", deleted[5]), iceberg.EqualTo(id, deleted[5]), false},
		{"id = 25000", iceberg.EqualTo(id, int64(25000)), false},
		{"id IN (" + strings.Join(in, ", ") + ")", iceberg.IsIn(id, inLits...), true},
		{"id IN (" + strings.Join(inDel, ", ") + ")", iceberg.IsIn(id, inDelLits...), true},
		{"id >= 7000 AND id < 7040", iceberg.NewAnd(iceberg.GreaterThanEqual(id, int64(7000)), iceberg.LessThan(id, int64(7040))), true},
		{"id >= 100 AND id < 400 AND val IS NULL", iceberg.NewAnd(iceberg.NewAnd(iceberg.GreaterThanEqual(id, int64(100)), iceberg.LessThan(id, int64(400))),
			iceberg.IsNull(iceberg.Reference("val"))), false}, // 300 ids: the btree does not narrow to rows
		{fmt.Sprintf("id IN (%s) OR id = %d", strings.Join(in[:5], ", "), deleted[1]), iceberg.NewOr(iceberg.IsIn(id, inLits[:5]...), iceberg.EqualTo(id, deleted[1])), true},
	}
	// pages read here: exact row groups would otherwise come from the
	// volume as rows (ReadRows), nothing decoded here
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoFallback: true, Force: true, NoVolumeRows: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check := func(state string) {
		for _, q := range queries {
			want := scanRows(t, tbl, snap, q.where, sel)
			res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.sql, Select: sel})
			if err != nil {
				t.Fatalf("%s: WHERE %s: %v", state, q.sql, err)
			}
			got := rowsOf(t, res.Schema, res.Records)
			res.Release()
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s: WHERE %s: the connector returned %d rows, iceberg-go %d\n%s", state, q.sql, len(got), len(want), firstDiff(got, want))
			}
			// every column sparsely but the one string column iceberg-go's
			// writer keeps wholly dictionary-encoded, which decodes as an
			// Arrow dictionary instead (indices, values once)
			if lo, hi := int64((len(sel)-1)*res.Stats.RowGroups), int64(len(sel)*res.Stats.RowGroups); q.sparse && (res.Stats.RowGroups == 0 || res.Stats.SparseColumns < lo || res.Stats.SparseColumns > hi) {
				t.Fatalf("%s: WHERE %s: %d columns of %d row groups decoded sparsely, want %d to %d", state, q.sql, res.Stats.SparseColumns, res.Stats.RowGroups, lo, hi)
			}
			t.Logf("%s: WHERE %.60s: %d rows, %d row groups, %d sparse column decodes", state, q.sql, len(got), res.Stats.RowGroups, res.Stats.SparseColumns)
		}
	}
	// btree alone: whole chunks fetched, decoded at the rows
	check("btree(id)")
	// side page indexes: the pages holding the rows, decoded at the rows
	for _, col := range sel {
		createIndex(col, "page_index")
	}
	check("btree(id) + page_index")
}
