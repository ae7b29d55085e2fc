package integration

import (
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// A file iceberg-go wrote without a page index is planned page by page once
// page_index side indexes exist for its columns: a btree point lookup then
// names the pages of each column holding the row, not whole column chunks,
// and the connector reads exactly the matching rows from them.
func TestSidePageIndexesTurnARowGroupLookupIntoPageReadsOnFilesWrittenWithoutOne(t *testing.T) {
	c := sharedCluster(t)
	createUnindexedTable(t, c, "side_pages", "events", 3000, "write.parquet.page-size-bytes", "256", "write.parquet.page-row-limit", "32", "write.parquet.dict-size-bytes", "64")
	const name = "side_pages.events"
	create := func(column, kind string) {
		t.Helper()
		if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
			"-table", name, "-column", column, "-kind", kind, "-wait"); err != nil {
			t.Fatalf("index create %s(%s): %v\n%s%s", kind, column, err, out, errOut)
		}
	}
	create("id", "btree")
	rowGroupOnly := planIDs(t, c, name, 1234)
	if len(rowGroupOnly.GetRowGroups()) != 1 || len(rowGroupOnly.GetPages()) != 0 {
		t.Fatalf("btree alone: %d row groups, %d pages; want 1 row group read whole", len(rowGroupOnly.GetRowGroups()), len(rowGroupOnly.GetPages()))
	}
	missing := strings.Join(rowGroupOnly.GetStats().GetIndexesMissing(), ";")
	if strings.Contains(missing, "page_index(name)") {
		t.Fatalf("no page_index is wanted yet, but the plan says one is missing: %q", missing)
	}
	for _, col := range []string{"id", "part", "val", "name"} {
		create(col, "page_index")
	}
	paged := planIDs(t, c, name, 1234)
	if len(paged.GetRowGroups()) != 1 {
		t.Fatalf("with side page indexes: %d row groups; want 1", len(paged.GetRowGroups()))
	}
	perColumn := map[string]int{}
	for _, pg := range paged.GetPages() {
		if !pg.GetDictionary() {
			perColumn[pg.GetColumn().GetPath()]++
		}
	}
	for _, col := range []string{"id", "part", "val", "name"} {
		if perColumn[col] < 1 || perColumn[col] > 2 {
			t.Fatalf("with side page indexes column %s plans %d data pages; want the one or two holding the row (pages %v, missing %q)",
				col, perColumn[col], perColumn, paged.GetStats().GetIndexesMissing())
		}
	}
	// The pages planned are a fraction of the row group's chunks (the
	// file ranges may coalesce small holes back in).
	var pageBytes int64
	for _, pg := range paged.GetPages() {
		pageBytes += pg.GetLength()
	}
	before, after := rowGroupOnly.GetStats().GetBytesPlanned(), paged.GetStats().GetBytesPlanned()
	if pageBytes*2 > before || after > before {
		t.Fatalf("side page indexes planned pages of %d bytes, ranges of %d, against %d for the whole row group; want pages under half", pageBytes, after, before)
	}
	if paged.GetFiles()[0].GetHasPageIndex() {
		t.Fatal("the planned file says it carries a page index of its own")
	}
	// The second plan is served from the footer the page indexes were
	// attached to, and plans the same.
	again := planIDs(t, c, name, 1234)
	if again.GetStats().GetBytesPlanned() != after || len(again.GetPages()) != len(paged.GetPages()) {
		t.Fatalf("a repeated plan planned %d bytes / %d pages, the first %d / %d", again.GetStats().GetBytesPlanned(), len(again.GetPages()), after, len(paged.GetPages()))
	}
	rows := connectorRows(t, c, name, "id = 1234 OR id = 7")
	if strings.Join(rows, "\n") != `{"id":7,"name":"n7"}`+"\n"+`{"id":1234,"name":"n1234"}` && strings.Join(rows, "\n") != `{"id":1234,"name":"n1234"}`+"\n"+`{"id":7,"name":"n7"}` {
		t.Fatalf("the connector read %v for ids 1234 and 7", rows)
	}
	_ = pushdown_pb.PredicateKind_PREDICATE_ICEBERG
}
