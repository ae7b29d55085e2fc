package integration

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// When the volume server whose pushdown service answers a table's side
// indexes dies while plans run, every plan still plans every matching row
// (the data has a second copy), queries return exactly the plain read's
// rows, and indexes_missing says the endpoint was unavailable.
func TestPlansKeepEveryRowAndSayTheIndexEndpointWasUnavailableWhenItsVolumeServerDies(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	mc := harness.StartMulti(t, harness.MultiOptions{Volumes: 2, Replication: "001"})
	c := &mc.Cluster
	const ns, name, table = "side_down", "events", "side_down.events"
	_, ids := createUnindexedTable(t, c, ns, name, 3000)
	rowGroupOf := map[int64]int32{}
	for pos, id := range ids {
		rowGroupOf[id] = int32(pos / 500)
	}
	indexCreate(t, c, table, "id", "btree")
	indexCreate(t, c, table, "id", "bloom")
	healthy := planIDs(t, c, table, 1234)
	if len(healthy.GetRowGroups()) != 1 || !strings.Contains(strings.Join(healthy.GetStats().GetIndexesUsed(), ";"), "btree(id)") {
		t.Fatalf("healthy cluster: id 1234 plans %d row groups using %v", len(healthy.GetRowGroups()), healthy.GetStats().GetIndexesUsed())
	}
	const where = "id = 1234 OR id = 7"
	sameRows(t, c, table, where, 2)

	// The victim answered the evaluations (and built the payloads): it
	// loaded the data file's footer to check its identity.
	victim, most := -1, int64(0)
	for i, addr := range mc.VolumePushdownAddrs {
		fc := volumeCache(t, addr, "footer")
		if n := fc.GetHits() + fc.GetMisses(); n > most {
			victim, most = i, n
		}
	}
	if victim < 0 {
		t.Fatalf("no volume pushdown service loaded a footer for the side indexes")
	}
	t.Logf("killing volume server %s (pushdown %s) while plans run", mc.VolumeServers[victim], mc.VolumePushdownAddrs[victim])

	var (
		mu          sync.Mutex
		plans       int
		sawDown     string
		stop        = make(chan struct{})
		done        = make(chan struct{})
		killed      = make(chan struct{})
		afterKill   int
		planFailure string
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			wasKilled := false
			select {
			case <-killed:
				wasKilled = true
			default:
			}
			resp := planIDs(t, c, table, 1234)
			missing := strings.Join(resp.GetStats().GetIndexesMissing(), "; ")
			mu.Lock()
			plans++
			if wasKilled {
				afterKill++
			}
			covered := false
			for _, rg := range resp.GetRowGroups() {
				covered = covered || rg.GetRowGroup() == rowGroupOf[1234]
			}
			if !covered && planFailure == "" {
				planFailure = "a plan dropped the row group holding id 1234: " + missing
			}
			if wasKilled && (strings.Contains(missing, "unavailable") || strings.Contains(missing, "no healthy volume pushdown service")) {
				sawDown = missing
			}
			mu.Unlock()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	mc.Volumes[victim].Kill()
	close(killed)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok, n := sawDown != "" && afterKill >= 3, afterKill
		mu.Unlock()
		if ok || time.Now().After(deadline) {
			if !ok {
				close(stop)
				<-done
				t.Fatalf("%d plans after the kill; none said the index endpoint was down", n)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	<-done
	if planFailure != "" {
		t.Fatal(planFailure)
	}
	t.Logf("%d plans, %d after the kill; indexes_missing said %q", plans, afterKill, sawDown)
	sameRows(t, c, table, where, 2)
}
