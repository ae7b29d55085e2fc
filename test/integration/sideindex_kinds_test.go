package integration

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// The bitmap, ngram and label_list kinds, created through the CLI on the
// demo table (written without page indexes or blooms), answer tenant and
// status equalities, LIKE '%…%' and array_contains with exactly the rows
// of a plain read while reading fewer bytes than the same query without
// side indexes. Where every leaf is answered exactly (bitmap, label_list)
// the connector reads the planned rows without evaluating the predicate;
// ngram's candidates are rechecked; rows deleted afterwards (position
// deletes) stay out either way. The exact row groups' rows come decoded
// from the volume holding each file (ReadRows) — with a list column read,
// or when asked however small their pages (-volumeRowsMinKB=0) — the same
// rows as reading their pages here (by default for flat columns' pages
// this small, and with -volumeRows=false) or through the S3 gateway.
func TestBitmapNgramAndLabelListIndexesReturnThePlainRowsReadingFewerBytes(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	const name = "side_kinds.events"
	const cols = "id, ts, tenant_id, status, tags"
	// the row groups are small: rows of flat columns only are asked of the
	// volume when told to ask however small the pages (by default read
	// here); with the list column tags they are asked of it by default
	const askVolume = "-volumeRowsMinKB=0"
	const flatCols = "id, ts, tenant_id, status"
	c := sharedCluster(t)
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", "20000", "-files", "4", "-rowGroupRows", "2500", "-indexed", "none")
	query := func(where string, extra ...string) ([]string, float64) {
		t.Helper()
		return queryRowsAndBytes(t, weed, "SELECT "+cols+" FROM "+name+" WHERE "+where, extra...)
	}
	queries := []string{
		"message LIKE '%timeout%'",
		"message LIKE '%tenant=tenant-007 %'",
		"message ILIKE '%TENANT=TENANT-007 %'",
		"array_contains(tags, 'gpu')",
		"'canary' = ANY(tags) AND tenant_id = 'tenant-042'",
		"tenant_id = 'tenant-042' AND status = 'timeout'",
		"NOT array_contains(tags, 'gpu') AND tenant_id = 'tenant-042'",
	}
	plain := map[string][]string{}
	before := map[string]float64{}
	for _, q := range queries {
		plain[q], _ = query(q, "-no-pushdown")
		_, before[q] = query(q)
	}
	for _, ix := range [][2]string{{"tenant_id", "bitmap"}, {"status", "bitmap"}, {"message", "ngram"}, {"tags", "label_list"}} {
		weed("index", "create", "-table", name, "-column", ix[0], "-kind", ix[1], "-wait")
	}
	out, _ := weed("index", "list", "-table", name)
	for _, k := range []string{"bitmap", "ngram", "label_list"} {
		if !strings.Contains(out, k) {
			t.Fatalf("index list does not show %s:\n%s", k, out)
		}
	}
	// exact: every leaf answered exactly by an index, so no recheck
	exact := map[string]bool{"array_contains(tags, 'gpu')": true, "'canary' = ANY(tags) AND tenant_id = 'tenant-042'": true,
		"tenant_id = 'tenant-042' AND status = 'timeout'": true}
	checkExact := func(q string, st map[string]any) {
		t.Helper()
		n, _ := st["exact_row_groups"].(float64)
		if strings.Contains(q, "LIKE") && n > 0 || exact[q] && n == 0 {
			t.Fatalf("%s: %.0f row groups read without evaluating the predicate", q, n)
		}
		v, _ := st["volume_row_groups"].(float64)
		if v > n || exact[q] && v == 0 {
			t.Fatalf("%s: %.0f row groups' rows decoded by the volume, %.0f exact", q, v, n)
		}
	}
	for _, q := range queries {
		got, st := queryRowsAndStats(t, weed, "SELECT "+cols+" FROM "+name+" WHERE "+q)
		if strings.Join(got, ",") != strings.Join(plain[q], ",") {
			t.Fatalf("%s: %d rows with side indexes, the plain read has %d", q, len(got), len(plain[q]))
		}
		checkExact(q, st)
		after := st["bytes_read"].(float64)
		// without the list column (selected or in the predicate) the small
		// row groups' pages are read here by default (-volumeRowsMinKB):
		// the rows the volume sends when asked however small the pages
		flat := "SELECT " + flatCols + " FROM " + name + " WHERE " + q
		here, hst := queryRowsAndStats(t, weed, flat)
		there, tst := queryRowsAndStats(t, weed, flat, askVolume)
		listRead := strings.Contains(q, "tags")
		if strings.Join(here, ",") != strings.Join(there, ",") || len(here) != len(got) || !listRead && hst["volume_row_groups"] != nil || exact[q] && tst["volume_row_groups"] == nil {
			t.Fatalf("%s without tags: %d rows read here (%v row groups' from the volume), %d asked of the volume (%v row groups'), %d with tags",
				q, len(here), hst["volume_row_groups"], len(there), tst["volume_row_groups"], len(got))
		}
		t.Logf("%-62s rows %5d  bytes without side indexes %8.0f  with %8.0f", q, len(got), before[q], after)
		// Rows spread over every row group (array_contains of a tag
		// 7% of rows hold) read as much; selective queries read less —
		// except where tenant_id's dictionary pages already pruned the
		// row groups without side indexes (the files have no page index,
		// so the kinds' row sets cannot narrow those further).
		strict := len(got)*100 < 20000 && !strings.Contains(q, "tenant_id")
		if after > before[q] || (strict && after >= before[q]) {
			t.Fatalf("%s: read %.0f bytes with side indexes, %.0f without", q, after, before[q])
		}
	}
	// position deletes of a tenant's rows and an id range: the files and
	// their side indexes stay, the deleted rows go
	tbl := mergeOnRead(t, c, "side_kinds", "events")
	tbl = deleteWhere(t, tbl, iceberg.NewOr(iceberg.EqualTo(iceberg.Reference("tenant_id"), "tenant-007"),
		iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(3000)), iceberg.LessThan(iceberg.Reference("id"), int64(9000)))))
	removed := 0
	for _, q := range queries {
		want, _ := query(q, "-no-pushdown")
		got, st := queryRowsAndStats(t, weed, "SELECT "+cols+" FROM "+name+" WHERE "+q)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s after deletes: %d rows with side indexes, the plain read has %d", q, len(got), len(want))
		}
		removed += len(plain[q]) - len(want)
		checkExact(q, st)
		for _, local := range [][]string{{"-volumeRows=false"}, {"-read", "s3"}} {
			here, st := queryRowsAndStats(t, weed, "SELECT "+cols+" FROM "+name+" WHERE "+q, local...)
			if strings.Join(here, ",") != strings.Join(want, ",") || st["volume_row_groups"] != nil {
				t.Fatalf("%s after deletes, %v: %d rows (%d wanted), %v row groups' rows from the volume", q, local, len(here), len(want), st["volume_row_groups"])
			}
		}
		t.Logf("%-62s rows %5d after deletes (of %d)", q, len(got), len(plain[q]))
	}
	if removed == 0 {
		t.Fatal("the deletes removed no row any query returns")
	}
	// under a LIMIT an exact row group's first rows are its answer: only
	// those are read from the volume
	q := "tenant_id = 'tenant-042' AND status = 'timeout'"
	all, _ := query(q, "-no-pushdown")
	in := map[string]bool{}
	for _, row := range all {
		in[row] = true
	}
	got, st := queryRowsAndStats(t, weed, "SELECT "+cols+" FROM "+name+" WHERE "+q+" LIMIT 3")
	if len(all) < 3 || len(got) != 3 || !in[got[0]] || !in[got[1]] || !in[got[2]] || st["volume_row_groups"] == nil {
		t.Fatalf("%s LIMIT 3: %q of %d matching rows, %v row groups' rows from the volume", q, got, len(all), st["volume_row_groups"])
	}
}

// `index create -param` validates parameters per kind before recording
// anything, records them in the table's spec, and a bitmap capped below a
// column's distinct count fails its builds with a message naming the
// count, which `index list` shows; raising the cap builds every file.
func TestIndexCreateParamsAreValidatedRecordedAndReachTheBuilds(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "side_params.events"
	weed := func(args ...string) (string, string, error) {
		t.Helper()
		args = append(args, "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		return harness.Weed(t, append([]string{"pushdown"}, args...)...)
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, err := weed(args...)
		if err != nil {
			t.Fatalf("weed pushdown %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out + errOut
	}
	refused := func(want string, args ...string) string {
		t.Helper()
		out, errOut, err := weed(args...)
		if err == nil || !strings.Contains(errOut, want) {
			t.Fatalf("weed pushdown %s: err %v, want a refusal naming %q\n%s%s", strings.Join(args, " "), err, want, out, errOut)
		}
		return errOut
	}
	must("demo", "-table", name, "-rows", "8000", "-files", "4", "-rowGroupRows", "1000", "-indexed", "none")
	create := []string{"index", "create", "-table", name, "-column", "tenant_id", "-kind", "bitmap"}
	refused(`build parameter max_distinct="abc": want an integer`, append(create, "-param", "max_distinct=abc")...)
	refused(`build parameter max_distinct="0": want an integer in [1, `, append(create, "-param", "max_distinct=0")...)
	refused(`unknown build parameter "max_dist": want max_distinct`, append(create, "-param", "max_dist=3")...)
	refused("want key=value", append(create, "-param", "max_distinct")...)
	refused(`unknown build parameter "fpp": this kind takes none`, "index", "create", "-table", name, "-column", "message", "-kind", "ngram", "-param", "fpp=0.1")
	if out := must("index", "list", "-table", name); strings.Contains(out, "bitmap") {
		t.Fatalf("a refused create recorded an index:\n%s", out)
	}

	errOut := refused("4 builds failed", append(create, "-param", "max_distinct=2", "-wait")...)
	if !strings.Contains(errOut, "distinct values, over max_distinct=2") {
		t.Fatalf("the failed builds do not name the distinct count:\n%s", errOut)
	}
	list := must("index", "list", "-table", name)
	for _, want := range []string{"max_distinct=2", "0 of 4", "failed 4", "bitmap on tenant_id (field 3) failed: ", "distinct values, over max_distinct=2"} {
		if !strings.Contains(list, want) {
			t.Fatalf("index list lacks %q:\n%s", want, list)
		}
	}

	must(append(create, "-param", "max_distinct=1000", "-wait")...)
	must("index", "create", "-table", name, "-column", "id", "-kind", "btree", "-param", "rows_per_group=256", "-wait")
	list = must("index", "list", "-table", name)
	for _, want := range []string{"max_distinct=1000", "rows_per_group=256", "committed 4"} {
		if !strings.Contains(list, want) {
			t.Fatalf("index list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, "failed") {
		t.Fatalf("raising max_distinct left failed builds:\n%s", list)
	}
	type listJSON struct {
		Wanted []struct {
			Kind   string            `json:"kind"`
			Params map[string]string `json:"params"`
		} `json:"wanted"`
		Entries []struct {
			Kind    string `json:"kind"`
			State   string `json:"state"`
			BuiltMs string `json:"built_unix_ms"`
		} `json:"entries"`
	}
	listed := func() (params map[string]string, built map[string]bool) {
		t.Helper()
		out, _, err := weed("index", "list", "-table", name, "-json")
		if err != nil {
			t.Fatal(err)
		}
		var js listJSON
		if err := json.Unmarshal([]byte(out), &js); err != nil {
			t.Fatalf("index list -json: %v\n%s", err, out)
		}
		params, built = map[string]string{}, map[string]bool{}
		for _, w := range js.Wanted {
			for k, v := range w.Params {
				params[w.Kind+"."+k] = v
			}
		}
		for _, en := range js.Entries {
			if en.Kind == "btree" && en.State == "committed" {
				built[en.BuiltMs] = true
			}
		}
		return params, built
	}
	params, built := listed()
	if params["bitmap.max_distinct"] != "1000" || params["btree.rows_per_group"] != "256" || len(params) != 2 {
		t.Fatalf("wanted params %v; want bitmap max_distinct=1000 and btree rows_per_group=256", params)
	}
	// New parameters replace the spec and rebuild the committed indexes.
	must("index", "create", "-table", name, "-column", "id", "-kind", "btree", "-param", "rows_per_group=512", "-wait")
	params, rebuilt := listed()
	if params["btree.rows_per_group"] != "512" {
		t.Fatalf("wanted params %v after re-creating the btree with rows_per_group=512", params)
	}
	for ms := range rebuilt {
		if built[ms] {
			t.Fatalf("btree entries built at %s ms were kept after their parameters changed", ms)
		}
	}
}

// A page_index side index on the list column tags lets array_contains
// with a label_list index read only the tags pages holding a candidate
// row (the demo's arrow-go V1 writer starts some of those pages inside a
// record; the index marks them, and a row's pages are all planned): the same rows, lists
// and all, as a plain read, in fewer bytes than with tags read by row
// group.
func TestListPagesOfAPageIndexSideIndexNarrowArrayContainsToThePagesOfItsRows(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	const name = "side_kinds.list_pages"
	weed := pushdownCLI(t, sharedCluster(t))
	weed("demo", "-table", name, "-rows", "131072", "-files", "2", "-rowGroupRows", "32768", "-indexed", "none", "-burstWindow", "32768")
	query := func(sql string, extra ...string) ([]string, float64) {
		t.Helper()
		return queryRowsAndBytes(t, weed, sql, extra...)
	}
	queries := []string{
		"SELECT id, tags FROM " + name + " WHERE array_contains(tags, 'gpu')",
		"SELECT tags FROM " + name + " WHERE array_contains(tags, 'gpu') AND status = 'ok'",
		"SELECT id, tags FROM " + name + " WHERE id BETWEEN 40000 AND 70000 AND array_contains(tags, 'gpu')",
	}
	plain := map[string][]string{}
	for _, q := range queries {
		plain[q], _ = query(q, "-no-pushdown")
	}
	weed("index", "create", "-table", name, "-column", "tags", "-kind", "label_list", "-wait")
	weed("index", "create", "-table", name, "-column", "id", "-kind", "page_index", "-wait")
	// pages read here (-volumeRows=false): exact row groups would
	// otherwise come from the volume as rows, no pages read at all
	before := map[string]float64{}
	for _, q := range queries {
		_, before[q] = query(q, "-volumeRows=false")
	}
	weed("index", "create", "-table", name, "-column", "tags", "-kind", "page_index", "-wait")
	for _, q := range queries {
		got, after := query(q, "-volumeRows=false")
		rows, _ := query(q)
		if len(plain[q]) == 0 || strings.Join(got, "\n") != strings.Join(plain[q], "\n") || strings.Join(rows, "\n") != strings.Join(plain[q], "\n") {
			t.Fatalf("%s: %d rows with list pages (%d as rows from the volume), the plain read has %d", q, len(got), len(rows), len(plain[q]))
		}
		t.Logf("%-90s rows %5d  bytes with tags by row group %8.0f  by page %8.0f", q, len(got), before[q], after)
		if after >= before[q] {
			t.Fatalf("%s: read %.0f bytes with tags pages, %.0f without", q, after, before[q])
		}
	}
}

// pushdownCLI runs `weed pushdown args…` against c, failing the test on
// an error; it returns stdout and stderr.
func pushdownCLI(t *testing.T, c *harness.Cluster) func(args ...string) (string, string) {
	e := c.Endpoints()
	return func(args ...string) (string, string) {
		t.Helper()
		args = append(args, "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		out, errOut, err := harness.Weed(t, append([]string{"pushdown"}, args...)...)
		if err != nil {
			t.Fatalf("weed pushdown %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out, errOut
	}
}

// queryRowsAndBytes runs sql through `weed pushdown query` (forced
// pushdown unless extra says otherwise) and returns its CSV rows, sorted,
// and the bytes its stats say it read.
func queryRowsAndBytes(t *testing.T, weed func(args ...string) (string, string), sql string, extra ...string) ([]string, float64) {
	t.Helper()
	lines, st := queryRowsAndStats(t, weed, sql, extra...)
	return lines, st["bytes_read"].(float64)
}

// queryRowsAndStats is queryRowsAndBytes with the query's whole stats.
func queryRowsAndStats(t *testing.T, weed func(args ...string) (string, string), sql string, extra ...string) ([]string, map[string]any) {
	t.Helper()
	out, errOut := weed(append([]string{"query", "-sql", sql, "-format", "csv", "-stats", "-force"}, extra...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
	sort.Strings(lines)
	errOut = strings.TrimSpace(errOut)
	var st map[string]any
	if err := json.Unmarshal([]byte(errOut[strings.LastIndex(errOut, "\n")+1:]), &st); err != nil {
		t.Fatalf("%s: stats: %v\n%s", sql, err, errOut)
	}
	return lines, st
}
