package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// computedOnCatalog returns the stats notes saying deletes were computed on
// the catalog instead of beside the data.
func computedOnCatalog(st *pushdown_pb.PushdownStats) []string {
	var out []string
	for _, m := range st.GetIndexesMissing() {
		if strings.Contains(m, "computed on the catalog") {
			out = append(out, m)
		}
	}
	return out
}

// volumeCache returns the named cache of a volume pushdown service's Status.
func volumeCache(t *testing.T, addr, name string) *pushdown_pb.CacheStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := pushdown_pb.NewPushdownVolumeClient(harness.Dial(t, addr)).Status(ctx, &pushdown_pb.StatusRequest{})
	if err != nil {
		t.Fatalf("volume pushdown service %s: Status: %v", addr, err)
	}
	for _, c := range st.GetCaches() {
		if c.GetName() == name {
			return c
		}
	}
	return &pushdown_pb.CacheStats{}
}

// catalogCache returns the named cache of the catalog's Status.
func catalogCache(t *testing.T, addr, name string) *pushdown_pb.CacheStats {
	t.Helper()
	for _, c := range catalogStatus(t, addr).GetCaches() {
		if c.GetName() == name {
			return c
		}
	}
	return &pushdown_pb.CacheStats{}
}

// A volume server dies in the middle of a workload of plans and pushdown
// reads over a table with v2 position deletes and v3 deletion vectors: every
// query still returns exactly the rows iceberg-go's plain scan returns, and
// the plans say the deletes the dead server's pushdown service computed are
// now computed on the catalog.
//
// Three volume servers, with the master's -defaultReplication=001: every
// volume (so every data and delete file) has a copy on two servers, so the
// data stays readable with one server gone, as in a production cluster;
// without replication the files whose only copy is on the dead server could
// not be read by any path, pushdown or plain, and the test could only
// assert errors. The volume pushdown service runs inside the volume server
// process, so killing the process (SIGKILL, no clean withdrawal from the
// registry) is how its pushdown service goes down.
func TestDeletesComputeOnTheCatalogWhenAVolumeServerDiesMidWorkload(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	mc := harness.StartMulti(t, harness.MultiOptions{Volumes: 3, Replication: "001"})
	c := &mc.Cluster
	ctx := context.Background()
	const name = "fb_it.mixed"
	tbl := positionDeleteTable(t, c, "fb_it", "mixed", 2, 2) // position deletes, then v3 deletion vectors
	snap := tbl.CurrentSnapshot().SnapshotID
	sel := []string{"id", "part", "val", "name"}
	want := make([][]string, len(deleteQueries))
	for i, q := range deleteQueries {
		want[i] = scanRows(t, tbl, snap, q.where, sel)
	}
	cat := c.Catalog(t)
	plan := func() (*pushdown_pb.PushdownStats, error) {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := cat.Plan(pctx, &pushdown_pb.ParquetPushdownRequest{Table: name})
		return resp.GetStats(), err
	}

	// On the healthy cluster the deletes are computed beside the data.
	st, err := plan()
	if err != nil {
		t.Fatalf("plan on the healthy cluster: %v", err)
	}
	if st.GetDeleteFilesApplied() == 0 || st.GetRowsDeleted() == 0 {
		t.Fatalf("healthy plan applied %d delete files, %d rows deleted", st.GetDeleteFilesApplied(), st.GetRowsDeleted())
	}
	if notes := computedOnCatalog(st); len(notes) > 0 {
		t.Fatalf("healthy cluster: deletes computed on the catalog: %q", notes)
	}
	if cc := catalogCache(t, c.CatalogAddr(), "deletes.on_catalog"); cc.GetHits()+cc.GetMisses() != 0 {
		t.Fatalf("healthy cluster: the catalog computed deletes itself (%d hits, %d misses)", cc.GetHits(), cc.GetMisses())
	}
	// The victim is a volume server whose pushdown service computed deletes
	// for this plan: the catalog routes some files' deletes to it.
	victim := -1
	for i, addr := range mc.VolumePushdownAddrs {
		if volumeCache(t, addr, "deletes").GetMisses() > 0 {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatalf("no volume pushdown service computed deletes for the healthy plan")
	}
	t.Logf("killing volume server %s (pushdown %s) mid-workload", mc.VolumeServers[victim], mc.VolumePushdownAddrs[victim])

	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true, NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// The workload: rounds of one plan plus every delete query, bounded in
	// count and time. The kill lands while round 1 is in flight.
	const (
		rounds      = 6
		killInRound = 1
		budget      = 40 * time.Second
	)
	var killedAt atomic.Int64 // unix nanos; 0 before the kill
	killed := make(chan struct{})
	deadline := time.Now().Add(budget)
	degradedPlans, plansAfterKill := 0, 0
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		if round == killInRound {
			go func() {
				defer close(killed)
				time.Sleep(100 * time.Millisecond)
				mc.Volumes[victim].Kill()
				killedAt.Store(time.Now().UnixNano())
			}()
		}
		started := time.Now()
		st, err := plan()
		if err != nil {
			t.Fatalf("round %d: plan: %v", round, err)
		}
		if k := killedAt.Load(); k != 0 && started.UnixNano() > k {
			plansAfterKill++
			notes := computedOnCatalog(st)
			if len(notes) > 0 {
				degradedPlans++
			}
			// Each note names the dead service (its RPC failed) or says no
			// healthy service is beside the data (the catalog already stopped
			// routing to it).
			for _, n := range notes {
				if !strings.Contains(n, "volume pushdown service "+mc.VolumePushdownAddrs[victim]+" unavailable") &&
					!strings.HasSuffix(n, "computed on the catalog: no healthy volume pushdown service beside their data") {
					t.Fatalf("round %d: note %q names neither the dead service %s nor the missing one", round, n, mc.VolumePushdownAddrs[victim])
				}
			}
			// The catalog remembers which volume server holds a file for
			// HolderTTL (a minute) after it first looked: until then, the
			// files it routed to the dead server have their deletes
			// computed on the catalog, and the plan says so — surely for
			// the first plan after the kill. Later ones may find the
			// files' holders again (a loaded run reaches the TTL, counted
			// from the first look, before the rounds end) and route them
			// to a live service: no note, and rows still checked below.
			if plansAfterKill == 1 && len(notes) == 0 {
				t.Fatalf("round %d: plan after the kill does not say deletes were computed on the catalog; indexes_missing %q",
					round, st.GetIndexesMissing())
			}
			if round == rounds-1 {
				t.Logf("round %d plan notes: %q", round, notes)
			}
		}
		for i, q := range deleteQueries {
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			res, err := conn.Query(qctx, connector.Query{Table: name, Where: q.sql, Select: sel})
			cancel()
			if err != nil {
				t.Fatalf("round %d WHERE %q: %v", round, q.sql, err)
			}
			got := rowsOf(t, res.Schema, res.Records)
			res.Release()
			if !res.Stats.Pushdown {
				t.Fatalf("round %d WHERE %q: read without pushdown (%s)", round, q.sql, res.Stats.FallbackReason)
			}
			if strings.Join(got, "\n") != strings.Join(want[i], "\n") {
				t.Fatalf("round %d WHERE %q: pushdown returned %d rows, iceberg-go %d\n%s", round, q.sql, len(got), len(want[i]), firstDiff(got, want[i]))
			}
		}
		if round == killInRound {
			<-killed
		}
	}
	if plansAfterKill < 3 {
		t.Fatalf("only %d plans ran after the kill within %s; want at least 3", plansAfterKill, budget)
	}
	if degradedPlans == 0 {
		t.Fatalf("no plan after the kill computed deletes on the catalog")
	}
	if cc := catalogCache(t, c.CatalogAddr(), "deletes.on_catalog"); cc.GetMisses() == 0 {
		t.Fatalf("after the kill the catalog's own delete cache saw no work (%d hits, %d misses)", cc.GetHits(), cc.GetMisses())
	}
	// A plain read agrees too, after the kill.
	plain, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for i, q := range deleteQueries {
		res, err := plain.Query(ctx, connector.Query{Table: name, Where: q.sql, Select: sel})
		if err != nil {
			t.Fatalf("plain read after the kill WHERE %q: %v", q.sql, err)
		}
		got := rowsOf(t, res.Schema, res.Records)
		res.Release()
		if strings.Join(got, "\n") != strings.Join(want[i], "\n") {
			t.Fatalf("plain read after the kill WHERE %q: %d rows, want %d\n%s", q.sql, len(got), len(want[i]), firstDiff(got, want[i]))
		}
	}
	t.Logf("%d plans after the kill, %d of them computed deletes on the catalog", plansAfterKill, degradedPlans)
}
