package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// forgePayload writes over the committed payload of entry target the
// committed payload of entry source, restamped with target's header and
// every checksum recomputed — a payload that passes every check a payload
// carries (what anyone who can write the bucket can make, issue 31's
// findings 2 and 3) — and returns the committed bytes it replaced.
func forgePayload(t *testing.T, c *harness.Cluster, target, source *pushdown_pb.IndexEntry) []byte {
	t.Helper()
	committed, status := filerGet(t, c, target.GetPayloadPath())
	other, status2 := filerGet(t, c, source.GetPayloadPath())
	if status != http.StatusOK || status2 != http.StatusOK {
		t.Fatalf("payloads: HTTP %d, %d", status, status2)
	}
	if sum := sha256.Sum256(committed); hex.EncodeToString(sum[:]) != target.GetPayloadSha256() || int64(len(committed)) != target.GetPayloadBytes() {
		t.Fatalf("the registry's size and SHA-256 of %s are not those of its bytes", target.GetPayloadPath())
	}
	h, err := sideindex.RecordedHeader(committed)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := sideindex.Restamp(context.Background(), target.GetKind(), other, h)
	if err != nil {
		t.Fatalf("restamp %s: %v", source.GetPayloadPath(), err)
	}
	k, _ := sideindex.Lookup(target.GetKind())
	if _, err := k.Open(context.Background(), forged, h); err != nil {
		t.Fatalf("the forged %s payload does not pass the payload's own checks (no forgery): %v", target.GetKind(), err)
	}
	filerWrite(t, c, target.GetPayloadPath(), forged)
	return committed
}

// waitEntryStates waits until every (file, kind) has state, and returns
// the entries.
func waitEntryStates(t *testing.T, c *harness.Cluster, tableName, state string, files []string, kinds ...string) []*pushdown_pb.IndexEntry {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		entries := indexEntries(t, c, tableName)
		var off []string
		for _, f := range files {
			for _, k := range kinds {
				if e := entryOf(entries, f, k); e.GetState() != state {
					off = append(off, fmt.Sprintf("%s of %s: %s (%s)", k, f, e.GetState(), e.GetReason()))
				}
			}
		}
		if len(off) == 0 {
			return entries
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry: %s; want %s", strings.Join(off, "; "), state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// vectorRowsOf is a vector plan's rows as (file index, position) in
// order, the file index into paths.
func vectorRowsOf(resp *pushdown_pb.ParquetPushdownResponse, paths []string) [][2]int64 {
	var out [][2]int64
	for _, r := range resp.GetRowRefs() {
		out = append(out, [2]int64{int64(slices.Index(paths, r.GetRef().GetFile())), r.GetRef().GetFilePosition()})
	}
	return out
}

// Issue 31, findings 2 and 3: a side-index payload is trusted only while
// its bytes are the ones the registry committed (size and SHA-256).
//
//   - Another file's btree and bitmap payloads, re-headed for file A with
//     their checksums recomputed and written through the filer: every
//     query (IN lists, equality, ranges) returns exactly the rows of a
//     plain read and the registry marks both entries corrupt.
//   - A self-consistent ivf payload (another file's, re-headed) written
//     over each file's committed one while the vectors and packed lists
//     are cached: the process survives, vector plans answer the exact
//     brute-force top-k (both files searched exactly) and the entries are
//     marked corrupt.
//   - Restarted with the reconciler on, the corrupt entries — and an entry
//     whose payload hash was removed from the registry (one committed
//     before payloads were hashed) — are rebuilt and used again.
func TestForgedSideIndexPayloadsAreRefusedByTheirCommittedHashAndRebuilt(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.index.reconcileEvery=0"}})
	ctx := context.Background()
	const ns, name, tableName = "trust_it", "events", "trust_it.events"
	createUnindexedTable(t, c, ns, name, 3000)
	appendShuffled(t, c, ns, name, 3000, 3000)
	indexCreate(t, c, tableName, "id", "btree")
	indexCreate(t, c, tableName, "id", "bitmap")
	fileA := planIDs(t, c, tableName, 1234).GetFiles()[0].GetFile() // ids 0..2999
	fileB := planIDs(t, c, tableName, 4321).GetFiles()[0].GetFile() // ids 3000..5999
	queries := []struct {
		where string
		rows  int
	}{
		{"id IN (1, 77, 2042, 4242, 5999, 123456)", 5},
		{"id = 1234", 1},
		{"id = 2999", 1},
		{"id IN (0, 1500, 2998, 3000)", 4},
		{"id >= 2990 AND id < 3010", 20},
		{"id < 5", 5},
		{"id BETWEEN 1000 AND 1010", 11},
	}
	for _, q := range queries[:2] { // warm: the volume caches both decoded indexes of file A
		sameRows(t, c, tableName, q.where, q.rows)
	}
	entries := indexEntries(t, c, tableName)
	for _, kind := range []string{"btree", "bitmap"} {
		forgePayload(t, c, entryOf(entries, fileA, kind), entryOf(entries, fileB, kind))
	}
	missing := waitPlanMissing(t, c, tableName, 1234, "btree(id): corrupt", "bitmap(id): corrupt")
	if !strings.Contains(missing, "not the one the registry committed") {
		t.Fatalf("indexes_missing %q does not say the payload is not the committed one", missing)
	}
	for _, q := range queries {
		sameRows(t, c, tableName, q.where, q.rows)
	}
	for _, e := range waitEntryStates(t, c, tableName, "corrupt", []string{fileA}, "btree", "bitmap") {
		if e.GetDataFile() == fileA && !strings.Contains(e.GetReason(), "not the one the registry committed") {
			t.Fatalf("%s of file A is corrupt for %q", e.GetKind(), e.GetReason())
		}
	}
	if e := entryOf(indexEntries(t, c, tableName), fileB, "btree"); e.GetState() != "committed" {
		t.Fatalf("file B's untouched btree is %s (%s)", e.GetState(), e.GetReason())
	}

	// Vectors: both files' ivf payloads swapped for each other's,
	// re-headed, while the volume holds their vectors and packed lists.
	const vecTable = "trust_it.vectors"
	e := c.Endpoints()
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", vecTable, "-rows", "12000", "-files", "2",
		"-rowGroupRows", "3000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	indexCreate(t, c, vecTable, "embedding", "ivf")
	vtbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"trust_it", "vectors"})
	if err != nil {
		t.Fatal(err)
	}
	paths := filesOf(t, vtbl)
	sort.Strings(paths)
	var oracle []oracleFile
	for _, p := range paths {
		oracle = append(oracle, readOracleFile(t, c, p))
	}
	q := slices.Clone(oracle[0].embs[17])
	q[0] += 0.05
	want := bruteForceL2(oracle, q, 10, func(int, int64) bool { return true })
	for range 2 { // warm: vectors, index and packed lists cached
		resp, err := vectorPlan(t, c, vecTable, q, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := resp.GetStats().GetVector(); st.GetFilesByIndex() != 2 {
			t.Fatalf("with both ivf payloads committed: %+v", st)
		}
	}
	ventries := indexEntries(t, c, vecTable)
	ea, eb := entryOf(ventries, paths[0], "ivf"), entryOf(ventries, paths[1], "ivf")
	headerB := mustRecordedHeader(t, c, eb)
	committedA := forgePayload(t, c, ea, eb)
	forgedB, err := sideindex.Restamp(ctx, "ivf", committedA, headerB)
	if err != nil {
		t.Fatal(err)
	}
	filerWrite(t, c, eb.GetPayloadPath(), forgedB)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := vectorPlan(t, c, vecTable, q, 10, "")
		if err != nil {
			t.Fatalf("a vector plan after the ivf payloads were forged: %v", err)
		}
		st := resp.GetStats().GetVector()
		missing := strings.Join(resp.GetStats().GetIndexesMissing(), "; ")
		if st.GetFilesExact() == 2 && strings.Count(missing, "corrupt") == 2 {
			got := vectorRowsOf(resp, paths)
			if len(got) != len(want) {
				t.Fatalf("%d rows, the brute force %d", len(got), len(want))
			}
			in := map[[2]int64]bool{}
			for _, g := range got {
				in[g] = true
			}
			for _, w := range want {
				if !in[[2]int64{int64(w.file), w.pos}] {
					t.Fatalf("searched exactly, the plan misses the brute force's row %d of %s (distance %.4f): %v", w.pos, paths[w.file], w.dist, got)
				}
			}
			t.Logf("forged ivf payloads: %s", missing)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the ivf payloads were forged: vector stats %+v, missing %q", st, missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitEntryStates(t, c, vecTable, "corrupt", paths, "ivf")
	if _, err := c.Catalog(t).Status(ctx, &pushdown_pb.StatusRequest{}); err != nil {
		t.Fatalf("the catalog after the vector queries: %v", err)
	}
	if _, err := c.Volume(t).Status(ctx, &pushdown_pb.StatusRequest{}); err != nil {
		t.Fatalf("the volume pushdown service after the vector queries: %v", err)
	}

	// An entry committed before payloads were hashed: file B's btree,
	// its hash removed from the registry record in the filer.
	built := map[string]int64{}
	for _, tn := range []string{tableName, vecTable} {
		for _, e := range indexEntries(t, c, tn) {
			built[e.GetDataFile()+"|"+e.GetKind()] = e.GetBuiltUnixMs()
		}
	}
	stripPayloadHash(t, c, tableName, fileB, "btree")

	// Restarted with the reconciler on: every corrupt and unhashed entry
	// is rebuilt (a new build, hashed) and used again.
	c.Proc.Stop(20 * time.Second)
	c = harness.StartMini(t, harness.MiniOptions{Dir: c.Dir, ExtraArgs: []string{"-pushdown.index.reconcileEvery=1s"}})
	deadline = time.Now().Add(90 * time.Second)
	for {
		var off []string
		for _, tn := range []string{tableName, vecTable} {
			for _, e := range indexEntries(t, c, tn) {
				key := e.GetDataFile() + "|" + e.GetKind()
				rebuilt := e.GetBuiltUnixMs() > built[key]
				wantRebuilt := e.GetDataFile() == fileA || e.GetKind() == "ivf" || key == fileB+"|btree"
				if e.GetState() != "committed" || len(e.GetPayloadSha256()) != 64 || rebuilt != wantRebuilt {
					off = append(off, fmt.Sprintf("%s of %s: %s (%s), rebuilt %v", e.GetKind(), e.GetDataFile(), e.GetState(), e.GetReason(), rebuilt))
				}
			}
		}
		if len(off) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a restart with the reconciler on: %s", strings.Join(off, "; "))
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, id := range []int64{1234, 4321} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			resp := planIDs(t, c, tableName, id)
			used, missing := strings.Join(resp.GetStats().GetIndexesUsed(), ";"), strings.Join(resp.GetStats().GetIndexesMissing(), ";")
			if strings.Contains(used, "btree(id)") && strings.Contains(used, "bitmap(id)") && !strings.Contains(missing, "btree(id)") && !strings.Contains(missing, "bitmap(id)") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the rebuild, id %d uses %q, misses %q", id, used, resp.GetStats().GetIndexesMissing())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, q := range queries[:3] {
		sameRows(t, c, tableName, q.where, q.rows)
	}
	resp, err := vectorPlan(t, c, vecTable, q, 10, "")
	if err != nil || resp.GetStats().GetVector().GetFilesByIndex() != 2 {
		t.Fatalf("after the rebuild the vector plan: %v, %+v", err, resp.GetStats().GetVector())
	}
}

// mustRecordedHeader is the header the committed payload of e records.
func mustRecordedHeader(t *testing.T, c *harness.Cluster, e *pushdown_pb.IndexEntry) sideindex.Header {
	t.Helper()
	b, _ := filerGet(t, c, e.GetPayloadPath())
	h, err := sideindex.RecordedHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// stripPayloadHash removes the payload size and SHA-256 of one registry
// entry from its record in the filer (as entries committed before
// payloads were hashed are stored).
func stripPayloadHash(t *testing.T, c *harness.Cluster, tableName, dataFile, kind string) {
	t.Helper()
	ctx := context.Background()
	ns, name, _ := strings.Cut(tableName, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	dir := indexing.RegistryDir + "/" + tbl.Metadata().TableUUID().String()
	sum := sha256.Sum256([]byte(dataFile))
	recName := hex.EncodeToString(sum[:12]) + ".json"
	client := filer_pb.NewSeaweedFilerClient(harness.Dial(t, net.JoinHostPort(c.IP, strconv.Itoa(c.FilerGrpcPort))))
	resp, err := client.LookupDirectoryEntry(ctx, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: recName})
	if err != nil {
		t.Fatalf("registry record %s/%s: %v", dir, recName, err)
	}
	var rec struct {
		DataFile string           `json:"data-file"`
		Entries  []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(resp.GetEntry().GetContent(), &rec); err != nil {
		t.Fatal(err)
	}
	stripped := false
	for _, e := range rec.Entries {
		if e["kind"] == kind {
			delete(e, "payload-sha256")
			stripped = true
		}
	}
	if !stripped {
		t.Fatalf("no %s entry in %s", kind, resp.GetEntry().GetContent())
	}
	b, _ := json.Marshal(rec)
	entry := resp.GetEntry()
	entry.Content = b
	entry.Attributes.FileSize = uint64(len(b))
	if _, err := client.UpdateEntry(ctx, &filer_pb.UpdateEntryRequest{Directory: dir, Entry: entry}); err != nil {
		t.Fatal(err)
	}
}
