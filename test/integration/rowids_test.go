package integration

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// planRowIDs plans pred over tableName asking for row ids.
func planRowIDs(t *testing.T, c *harness.Cluster, tableName, pred string, max int64) *pushdown_pb.ParquetPushdownResponse {
	t.Helper()
	resp, err := c.Catalog(t).Plan(context.Background(), &pushdown_pb.ParquetPushdownRequest{Table: tableName,
		PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: []byte(pred), RequestRowIds: true, MaxRowIds: max})
	if err != nil {
		t.Fatalf("plan %s with row ids: %v", pred, err)
	}
	return resp
}

// filePositionsOf reads a data file through the filer with arrow-go and
// returns the file position of each id in it.
func filePositionsOf(t *testing.T, c *harness.Cluster, file string) map[int64]int64 {
	t.Helper()
	resp, err := http.Get("http://" + c.FilerAddr() + "/buckets/" + strings.TrimPrefix(file, "s3://"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("read %s: %v (HTTP %d)", file, err, resp.StatusCode)
	}
	local := filepath.Join(t.TempDir(), "data.parquet")
	if err := os.WriteFile(local, body, 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, err := harness.ReadParquetFile(context.Background(), local)
	if err != nil {
		t.Fatalf("arrow-go read of %s: %v", file, err)
	}
	defer tbl.Release()
	out := map[int64]int64{}
	pos := int64(0)
	for _, chunk := range tbl.Column(0).Data().Chunks() {
		ids := chunk.(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			out[ids.Value(i)] = pos
			pos++
		}
	}
	return out
}

func refPositions(resp *pushdown_pb.ParquetPushdownResponse) []string {
	var out []string
	for _, r := range resp.GetRowRefs() {
		out = append(out, fmt.Sprintf("%d@%d", r.GetRef().GetFilePosition(), r.GetRef().GetRowGroup()))
	}
	return out
}

// With a btree on id, a plan asking for row ids answers exactly the file
// positions of the matching rows (as arrow-go reads the file), without the
// rows a position delete removed; max_row_ids cuts them and says so; a
// predicate a side index cannot answer exactly gets no row refs and a note.
func TestRowIdsFromAnExactBtreeAnswerAreTheMatchingRowsFilePositions(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"rowid_it"}, nil)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"rowid_it", "events"}, deleteSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version":                 "2",
		table.WriteDeleteModeKey:         table.WriteModeMergeOnRead,
		"write.parquet.row-group-limit":  "500",
		"write.metadata.metrics.default": "none",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 3000)
	for i := range ids {
		ids[i] = int64(i)
	}
	rand.New(rand.NewPCG(3, 5)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	at := deleteRowsOf(t, ids)
	tbl, err = tbl.AppendTable(ctx, at, 1<<20, nil)
	at.Release()
	if err != nil {
		t.Fatal(err)
	}
	const name = "rowid_it.events"
	in := `{"type":"in","term":{"field-id":1},"values":[5,17,1500,2999,77777]}`

	before := planRowIDs(t, c, name, in, 0)
	if len(before.GetRowRefs()) != 0 || !strings.Contains(strings.Join(before.GetStats().GetIndexesMissing(), ";"), "row ids: no exact side-index answer for the whole predicate (1 of 1 files") {
		t.Fatalf("without indexes: %d row refs, indexes missing %q", len(before.GetRowRefs()), before.GetStats().GetIndexesMissing())
	}

	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "id", "-kind", "btree", "-wait"); err != nil {
		t.Fatalf("index create btree: %v\n%s%s", err, out, errOut)
	}
	// id 17 goes by a position delete (the data file stays, so does its index).
	tbl = deleteWhere(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(17)))
	_ = tbl

	resp := planRowIDs(t, c, name, in, 0)
	if len(resp.GetFiles()) != 1 {
		t.Fatalf("plan of %s has %d files", in, len(resp.GetFiles()))
	}
	positions := filePositionsOf(t, c, resp.GetFiles()[0].GetFile())
	var want []string
	var wantPos []int64
	for _, id := range []int64{5, 1500, 2999} {
		wantPos = append(wantPos, positions[id])
	}
	sort.Slice(wantPos, func(i, j int) bool { return wantPos[i] < wantPos[j] })
	for _, p := range wantPos {
		want = append(want, fmt.Sprintf("%d@%d", p, p/500))
	}
	got := refPositions(resp)
	if fmt.Sprint(got) != fmt.Sprint(want) || resp.GetTruncated() {
		t.Fatalf("row refs %v (truncated %v); want %v (ids 5, 1500, 2999; 17 deleted, 77777 absent)", got, resp.GetTruncated(), want)
	}
	for _, r := range resp.GetRowRefs() {
		if r.GetRef().GetFile() != resp.GetFiles()[0].GetFile() {
			t.Fatalf("row ref names file %s", r.GetRef().GetFile())
		}
	}

	cut := planRowIDs(t, c, name, in, 2)
	if fmt.Sprint(refPositions(cut)) != fmt.Sprint(want[:2]) || !cut.GetTruncated() {
		t.Fatalf("max_row_ids 2: row refs %v truncated %v; want %v truncated", refPositions(cut), cut.GetTruncated(), want[:2])
	}

	// name has no index: the AND's answer is a superset, so no row refs.
	and := `{"type":"and","left":` + in + `,"right":{"type":"eq","term":{"field-id":4},"value":"n5"}}`
	inexact := planRowIDs(t, c, name, and, 0)
	if len(inexact.GetRowRefs()) != 0 || !strings.Contains(strings.Join(inexact.GetStats().GetIndexesMissing(), ";"), "row ids: no exact side-index answer") {
		t.Fatalf("id IN … AND name = 'n5': %d row refs, indexes missing %q; want none and a note", len(inexact.GetRowRefs()), inexact.GetStats().GetIndexesMissing())
	}
}
