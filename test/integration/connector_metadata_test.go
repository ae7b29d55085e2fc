package integration

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// A connector keeps a table's metadata between queries while the plan
// confirms it current (no LoadTable); the query after another writer's
// commit — rows appended, rows deleted, a column added — reads the new
// version.
func TestTableMetadataIsCachedUntilAnotherWriterCommitsAndTheNextQuerySeesTheCommit(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	tbl := createDeleteTable(t, c, "meta_it", "events", 2)
	tbl = appendRows(t, tbl, 0, 1000)
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true, NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sel := []string{"id"}
	query := func(wantRows int64, wantCached bool) {
		t.Helper()
		res, err := conn.Query(ctx, connector.Query{Table: "meta_it.events", Where: "val IS NOT NULL OR id >= 0", Select: sel})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if res.NumRows() != wantRows || res.Stats.MetadataCached != wantCached || !res.Stats.Pushdown {
			t.Fatalf("%d rows, metadata cached %v, pushdown %v (%s); want %d rows, cached %v",
				res.NumRows(), res.Stats.MetadataCached, res.Stats.Pushdown, res.Stats.FallbackReason, wantRows, wantCached)
		}
	}
	query(1000, false) // loaded
	query(1000, true)  // the cached copy, confirmed by the plan
	tbl = appendRows(t, tbl, 1000, 1500)
	query(1500, false) // another writer committed: loaded again
	query(1500, true)
	tbl = deleteWhere(t, tbl, idIn([]int64{1, 2, 3}))
	query(1497, false)
	// a column another writer adds is known to the next query
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sel = []string{"id", "note"}
	query(1497, false)
	query(1497, true)
}
