package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// tempLeftovers lists the names of temporary payloads in the folder of loc.
func tempLeftovers(t *testing.T, c *harness.Cluster, loc string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, filerURL(c, loc[:strings.LastIndexByte(loc, '/')+1]), nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listing struct {
		Entries []struct{ FullPath string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&listing)
	var out []string
	for _, e := range listing.Entries {
		if n := e.FullPath[strings.LastIndexByte(e.FullPath, '/')+1:]; strings.HasPrefix(n, ".tmp-") {
			out = append(out, n)
		}
	}
	return out
}

func indexHealth(t *testing.T, c *harness.Cluster) string {
	t.Helper()
	st, err := c.Catalog(t).Status(context.Background(), &pushdown_pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st.GetIndexHealth()
}

// waitAllCommitted waits until the registry lists want committed entries,
// each with a payload of the committed size, and returns them.
func waitAllCommitted(t *testing.T, c *harness.Cluster, tableName string, want int, within time.Duration) []*pushdown_pb.IndexEntry {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		entries := indexEntries(t, c, tableName)
		n := 0
		for _, e := range entries {
			if e.GetState() == "committed" {
				n++
			}
		}
		if n == want && len(entries) == want {
			return entries
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry of %s: %d of %d entries committed (%d listed): %v", tableName, n, want, len(entries), entries)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// A build killed halfway (the whole process, SIGKILL, during `index create
// -wait`) leaves nothing half-built visible after a restart on the same
// directory: every committed entry has a payload of its committed size,
// queries are exact, the reconciler finishes the builds and temporary
// leftovers are collected. The reconciler then repairs a payload deleted
// behind its back, and the indexes of files that left every snapshot are
// removed after the grace period.
func TestABuildKilledHalfwayLeavesNothingHalfBuiltAndMaintenanceRepairsAndExpiresIndexes(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.index.reconcileEvery=0"}})
	const ns, name, table = "side_crash", "events", "side_crash.events"
	createUnindexedTable(t, c, ns, name, 3000)
	const files = 8
	for i := int64(1); i < files; i++ {
		appendShuffled(t, c, ns, name, i*100_000, 60_000)
	}
	cli := exec.Command(harness.Binary(t), "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", table, "-column", "id", "-kind", "btree", "-wait")
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the cluster once the build is under way.
	deadline := time.Now().Add(60 * time.Second)
	committedAtKill := 0
	for {
		entries := indexEntries(t, c, table)
		building := 0
		committedAtKill = 0
		for _, e := range entries {
			switch e.GetState() {
			case "building":
				building++
			case "committed":
				committedAtKill++
			}
		}
		if building > 0 {
			break
		}
		if committedAtKill == files || time.Now().After(deadline) {
			t.Fatalf("the build finished (%d committed) before it could be killed; make the table larger", committedAtKill)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Proc.Kill()
	_ = cli.Wait()
	t.Logf("killed the cluster with %d of %d btrees committed", committedAtKill, files)

	c = harness.StartMini(t, harness.MiniOptions{Dir: c.Dir, ExtraArgs: []string{
		"-pushdown.index.reconcileEvery=1s", "-pushdown.index.gracePeriod=3s", "-pushdown.index.leftoverAge=1s"}})
	// Nothing half-built is visible: a committed entry has its payload.
	for _, e := range indexEntries(t, c, table) {
		if e.GetState() != "committed" {
			continue
		}
		if b, status := filerGet(t, c, e.GetPayloadPath()); status != http.StatusOK || int64(len(b)) != e.GetPayloadBytes() {
			t.Fatalf("after the restart %s is committed but its payload answers HTTP %d with %d of %d bytes", e.GetPayloadPath(), status, len(b), e.GetPayloadBytes())
		}
	}
	const where = "id = 1234 OR id = 100007 OR id = 700001"
	sameRows(t, c, table, where, 3)

	// The reconciler finishes what the crash left building; leftovers go.
	entries := waitAllCommitted(t, c, table, files, 90*time.Second)
	for _, e := range entries {
		if left := tempLeftovers(t, c, e.GetPayloadPath()); len(left) > 0 {
			t.Fatalf("temporary payloads left beside %s: %v", e.GetPayloadPath(), left)
		}
	}
	sameRows(t, c, table, where, 3)

	// A payload deleted behind the registry's back is marked missing and rebuilt.
	victim := entries[0]
	filerRemove(t, c, victim.GetPayloadPath())
	deadline = time.Now().Add(30 * time.Second)
	for {
		health := indexHealth(t, c)
		e := entryOf(indexEntries(t, c, table), victim.GetDataFile(), "btree")
		_, status := filerGet(t, c, victim.GetPayloadPath())
		if strings.Contains(health, "missing 1") && e.GetState() == "committed" && e.GetBuiltUnixMs() > victim.GetBuiltUnixMs() && status == http.StatusOK {
			t.Logf("status: %s", health)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after deleting %s: status %q, entry %v, payload HTTP %d", victim.GetPayloadPath(), health, e, status)
		}
		time.Sleep(300 * time.Millisecond)
	}
	sameRows(t, c, table, where, 3)

	// Files that leave every snapshot lose their indexes after the grace period.
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, []string{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	at := deleteRowsOf(t, []int64{1, 2, 3})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.OverwriteTable(ctx, at, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.ExpireSnapshots(icetable.WithRetainLast(1), icetable.WithOlderThan(0), icetable.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		gone := 0
		for _, e := range entries {
			if _, status := filerGet(t, c, e.GetPayloadPath()); status == http.StatusNotFound {
				gone++
			}
		}
		health := indexHealth(t, c)
		if gone == len(entries) && strings.Contains(health, "8 expired") {
			t.Logf("status: %s", health)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after expiry: %d of %d old payloads removed; status %q", gone, len(entries), health)
		}
		time.Sleep(500 * time.Millisecond)
	}
	sameRows(t, c, table, "id = 2 OR id = 1234", 1)

	// A dropped table's side indexes go after the grace period, and so does
	// the record naming it.
	survivor := waitAllCommitted(t, c, table, 1, 60*time.Second)[0]
	st, err := c.Catalog(t).Status(ctx, &pushdown_pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_ = st
	if err := c.Iceberg(t).DropTable(ctx, []string{ns, name}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		_, status := filerGet(t, c, survivor.GetPayloadPath())
		health := indexHealth(t, c)
		if status == http.StatusNotFound && strings.Contains(health, "9 expired") {
			t.Logf("status: %s", health)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the table was dropped: its payload %s answers HTTP %d; status %q", survivor.GetPayloadPath(), status, health)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
