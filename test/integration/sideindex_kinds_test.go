package integration

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// The bitmap, ngram and label_list kinds, created through the CLI on the
// demo table (written without page indexes or blooms), answer tenant and
// status equalities, LIKE '%…%' and array_contains with exactly the rows
// of a plain read while reading fewer bytes than the same query without
// side indexes.
func TestBitmapNgramAndLabelListIndexesReturnThePlainRowsReadingFewerBytes(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "side_kinds.events"
	weed := func(args ...string) (string, string) {
		t.Helper()
		args = append(args, "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		out, errOut, err := harness.Weed(t, append([]string{"pushdown"}, args...)...)
		if err != nil {
			t.Fatalf("weed pushdown %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out, errOut
	}
	weed("demo", "-table", name, "-rows", "20000", "-files", "4", "-rowGroupRows", "2500", "-indexed", "none")
	query := func(where string, extra ...string) ([]string, float64) {
		t.Helper()
		out, errOut := weed(append([]string{"query", "-sql", "SELECT id FROM " + name + " WHERE " + where, "-format", "csv", "-stats", "-force"}, extra...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
		sort.Strings(lines)
		errOut = strings.TrimSpace(errOut)
		var st map[string]any
		if err := json.Unmarshal([]byte(errOut[strings.LastIndex(errOut, "\n")+1:]), &st); err != nil {
			t.Fatalf("%s: stats: %v\n%s", where, err, errOut)
		}
		return lines, st["bytes_read"].(float64)
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
	for _, q := range queries {
		got, after := query(q)
		if strings.Join(got, ",") != strings.Join(plain[q], ",") {
			t.Fatalf("%s: %d rows with side indexes, the plain read has %d", q, len(got), len(plain[q]))
		}
		t.Logf("%-62s rows %5d  bytes without side indexes %8.0f  with %8.0f", q, len(got), before[q], after)
		// Rows spread over every row group (array_contains of a tag
		// 7% of rows hold) read as much; selective queries read less.
		if after > before[q] || (len(got)*100 < 20000 && after >= before[q]) {
			t.Fatalf("%s: read %.0f bytes with side indexes, %.0f without", q, after, before[q])
		}
	}
}
