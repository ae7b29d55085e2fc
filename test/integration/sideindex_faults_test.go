package integration

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// filerURL is the filer HTTP URL of an s3:// location of the cluster.
func filerURL(c *harness.Cluster, loc string) string {
	return "http://" + c.FilerAddr() + "/buckets/" + strings.TrimPrefix(loc, "s3://")
}

// filerGet returns the bytes at loc and the HTTP status.
func filerGet(t *testing.T, c *harness.Cluster, loc string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(filerURL(c, loc))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.StatusCode
}

// filerWrite replaces the file at loc with data, out of band of any index
// machinery (what a faulty disk, an operator or a stray tool does).
func filerWrite(t *testing.T, c *harness.Cluster, loc string, data []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	name := loc[strings.LastIndexByte(loc, '/')+1:]
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = w.Close()
	resp, err := http.Post(filerURL(c, loc), w.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("write %s: HTTP %d", loc, resp.StatusCode)
	}
}

func filerRemove(t *testing.T, c *harness.Cluster, loc string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, filerURL(c, loc), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// indexEntries is the registry as ListIndexes reports it.
func indexEntries(t *testing.T, c *harness.Cluster, tableName string) []*pushdown_pb.IndexEntry {
	t.Helper()
	resp, err := c.Catalog(t).ListIndexes(context.Background(), &pushdown_pb.ListIndexesRequest{Table: tableName})
	if err != nil {
		t.Fatalf("ListIndexes %s: %v", tableName, err)
	}
	return resp.GetEntries()
}

func entryOf(entries []*pushdown_pb.IndexEntry, dataFile, kind string) *pushdown_pb.IndexEntry {
	for _, e := range entries {
		if e.GetDataFile() == dataFile && e.GetKind() == kind {
			return e
		}
	}
	return nil
}

func indexCreate(t *testing.T, c *harness.Cluster, tableName, column, kind string) string {
	t.Helper()
	out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", tableName, "-column", column, "-kind", kind, "-wait")
	if err != nil {
		t.Fatalf("index create %s(%s): %v\n%s%s", kind, column, err, out, errOut)
	}
	return errOut
}

// plainRows reads plainly (iceberg-go's scan through S3, no plan at all).
func plainRows(t *testing.T, c *harness.Cluster, tableName, where string) []string {
	t.Helper()
	out, errOut, err := harness.Weed(t, "pushdown", "query", "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-sql", "SELECT id, name FROM "+tableName+" WHERE "+where, "-format", "json", "-no-pushdown")
	if err != nil {
		t.Fatalf("plain query %s: %v\n%s", where, err, errOut)
	}
	rows := jsonLines(out)
	sort.Strings(rows)
	return rows
}

// jsonLines are the non-empty lines of a query's JSON output.
func jsonLines(out string) []string {
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			rows = append(rows, l)
		}
	}
	return rows
}

// sameRows fails unless the pushdown query returns exactly the rows the
// plain read does.
func sameRows(t *testing.T, c *harness.Cluster, tableName, where string, wantN int) {
	t.Helper()
	got := connectorRows(t, c, tableName, where)
	sort.Strings(got)
	want := plainRows(t, c, tableName, where)
	if len(want) != wantN || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("WHERE %s: pushdown read %d rows %v, the plain read %d rows %v (want %d)", where, len(got), got, len(want), want, wantN)
	}
}

// appendShuffled appends ids [from, from+n) shuffled, as one more file.
func appendShuffled(t *testing.T, c *harness.Cluster, ns, name string, from, n int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, []string{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = from + int64(i)
	}
	r := rand.New(rand.NewPCG(uint64(from), 13))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	at := deleteRowsOf(t, ids)
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
}

// waitPlanMissing plans id until indexes_missing holds every want, and
// returns what it said.
func waitPlanMissing(t *testing.T, c *harness.Cluster, tableName string, id int64, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := planIDs(t, c, tableName, id)
		missing := strings.Join(resp.GetStats().GetIndexesMissing(), "; ")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(missing, w)
		}
		if ok {
			return missing
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan of id %d: indexes missing %q, used %q; want %q", id, missing, resp.GetStats().GetIndexesUsed(), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRangeMissing plans ids 0..2999 (every key of file A) until
// indexes_missing holds want.
func waitRangeMissing(t *testing.T, c *harness.Cluster, tableName, want string) {
	t.Helper()
	pred := `{"type":"and","left":{"type":"gt-eq","term":{"field-id":1},"value":0},"right":{"type":"lt","term":{"field-id":1},"value":3000}}`
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Catalog(t).Plan(context.Background(), &pushdown_pb.ParquetPushdownRequest{Table: tableName,
			PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: []byte(pred)})
		if err != nil {
			t.Fatalf("plan %s: %v", pred, err)
		}
		missing := strings.Join(resp.GetStats().GetIndexesMissing(), "; ")
		if strings.Contains(missing, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan of ids 0..2999: indexes missing %q; want %q", missing, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Side-index payloads truncated, corrupted by one byte, swapped between two
// data files or deleted behind the catalog's back cost only pruning: every
// query returns exactly the rows a plain read returns, the plan's
// indexes_missing names the kind, the column and why, the registry marks
// the entry, and a rebuild puts the index back to work.
func TestDamagedSideIndexPayloadsCostOnlyPruningAndTheRegistrySaysWhy(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.index.reconcileEvery=0"}})
	const ns, name, table = "side_faults", "events", "side_faults.events"
	createUnindexedTable(t, c, ns, name, 3000)
	appendShuffled(t, c, ns, name, 3000, 3000)
	indexCreate(t, c, table, "id", "btree")
	indexCreate(t, c, table, "id", "bloom")

	// File A holds ids below 3000, file B the rest.
	ok := planIDs(t, c, table, 1234)
	if len(ok.GetFiles()) != 1 || !strings.Contains(strings.Join(ok.GetStats().GetIndexesUsed(), ";"), "btree(id)") {
		t.Fatalf("with both indexes built, id 1234 plans files %v using %v", ok.GetFiles(), ok.GetStats().GetIndexesUsed())
	}
	fileA := ok.GetFiles()[0].GetFile()
	fileB := planIDs(t, c, table, 4321).GetFiles()[0].GetFile()
	entries := indexEntries(t, c, table)
	payload := map[string]string{} // file|kind → payload path
	original := map[string][]byte{}
	for _, f := range []string{fileA, fileB} {
		for _, k := range []string{"btree", "bloom"} {
			e := entryOf(entries, f, k)
			if e == nil || e.GetState() != "committed" {
				t.Fatalf("registry entry of %s of %s: %v", k, f, e)
			}
			b, status := filerGet(t, c, e.GetPayloadPath())
			if status != http.StatusOK || int64(len(b)) != e.GetPayloadBytes() {
				t.Fatalf("payload %s: HTTP %d, %d bytes of %d", e.GetPayloadPath(), status, len(b), e.GetPayloadBytes())
			}
			payload[f+"|"+k], original[f+"|"+k] = e.GetPayloadPath(), b
		}
	}
	const where = "id = 1234 OR id = 4321 OR id = 77"
	sameRows(t, c, table, where, 3)

	faults := []struct {
		name   string
		state  string
		damage func(kind string)
	}{
		{"truncated", "corrupt", func(k string) {
			b := original[fileA+"|"+k]
			filerWrite(t, c, payload[fileA+"|"+k], b[:len(b)/2])
		}},
		{"one byte flipped", "corrupt", func(k string) {
			b := bytes.Clone(original[fileA+"|"+k])
			b[len(b)/2] ^= 0x40
			filerWrite(t, c, payload[fileA+"|"+k], b)
		}},
		{"swapped with another file's", "corrupt", func(k string) {
			filerWrite(t, c, payload[fileA+"|"+k], original[fileB+"|"+k])
			filerWrite(t, c, payload[fileB+"|"+k], original[fileA+"|"+k])
		}},
		{"deleted", "missing", func(k string) {
			filerRemove(t, c, payload[fileA+"|"+k])
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			for _, k := range []string{"btree", "bloom"} {
				f.damage(k)
			}
			missing := waitPlanMissing(t, c, table, 1234, "bloom(id): "+f.state)
			// A btree checks the pages it reads: a range over all of file
			// A's keys reads every one.
			waitRangeMissing(t, c, table, "btree(id): "+f.state)
			t.Logf("%s payloads: indexes_missing %q", f.name, missing)
			sameRows(t, c, table, where, 3)
			if got := planIDs(t, c, table, 1234); len(got.GetRowGroups()) != 6 {
				t.Fatalf("with its indexes %s, id 1234 plans %d row groups of file A; want all 6", f.name, len(got.GetRowGroups()))
			}
			// The failed evaluation marked the registry.
			deadline := time.Now().Add(10 * time.Second)
			for {
				entries := indexEntries(t, c, table)
				bt, bl := entryOf(entries, fileA, "btree"), entryOf(entries, fileA, "bloom")
				if bt.GetState() == f.state && bl.GetState() == f.state && bt.GetReason() != "" && bl.GetReason() != "" {
					t.Logf("registry: btree %s (%s)", bt.GetState(), bt.GetReason())
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("registry after the payloads were %s: btree %s (%s), bloom %s (%s); want %s with a reason", f.name,
						bt.GetState(), bt.GetReason(), bl.GetState(), bl.GetReason(), f.state)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if f.name == "swapped with another file's" {
				waitPlanMissing(t, c, table, 4321, "btree(id): corrupt")
				sameRows(t, c, table, where, 3)
			}
			// A rebuild repairs what is not committed.
			for _, k := range []string{"btree", "bloom"} {
				if out := indexCreate(t, c, table, "id", k); !strings.Contains(out, "0 failed") {
					t.Fatalf("rebuild of %s said %q", k, out)
				}
			}
			for _, e := range indexEntries(t, c, table) {
				if e.GetState() != "committed" {
					t.Fatalf("after the rebuild: %s of %s is %s (%s)", e.GetKind(), e.GetDataFile(), e.GetState(), e.GetReason())
				}
				b, _ := filerGet(t, c, e.GetPayloadPath())
				original[e.GetDataFile()+"|"+e.GetKind()] = b
			}
			deadline = time.Now().Add(20 * time.Second)
			for {
				got := planIDs(t, c, table, 1234)
				missing := strings.Join(got.GetStats().GetIndexesMissing(), ";")
				if len(got.GetRowGroups()) == 1 && !strings.Contains(missing, "btree(id)") && !strings.Contains(missing, "bloom(id)") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the rebuild id 1234 plans %d row groups, indexes missing %q", len(got.GetRowGroups()), got.GetStats().GetIndexesMissing())
				}
				time.Sleep(200 * time.Millisecond)
			}
			sameRows(t, c, table, where, 3)
		})
	}
}
