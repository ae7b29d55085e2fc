package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// rowsOfPlan renders a vector plan's row refs as "file@position" in
// distance order.
func rowsOfPlan(resp *pushdown_pb.ParquetPushdownResponse) []string {
	var out []string
	for _, r := range resp.GetRowRefs() {
		out = append(out, fmt.Sprintf("%s@%d", r.GetRef().GetFile(), r.GetRef().GetFilePosition()))
	}
	return out
}

// endpointsOfPlan maps each searched file of a vector plan to the
// endpoint that searched it.
func endpointsOfPlan(resp *pushdown_pb.ParquetPushdownResponse) map[string]string {
	out := map[string]string{}
	for _, f := range resp.GetStats().GetVector().GetFiles() {
		out[f.GetFile()] = f.GetEndpoint()
	}
	return out
}

// On three volume servers keeping two copies of every volume, the vector
// search of a file goes to the same endpoint plan after plan (rendezvous
// placement over its holders); when the endpoint chosen for some files
// dies while plans run, every plan still returns the healthy cluster's
// rows — the files move to their other holder, the files placed elsewhere
// stay where they were — for unfiltered and filtered queries alike.
func TestVectorPlansKeepTheirRowsWhenTheChosenHolderDiesAndPlacementIsStable(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	mc := harness.StartMulti(t, harness.MultiOptions{Volumes: 3, Replication: "001"})
	c := &mc.Cluster
	e := c.Endpoints()
	const name = "vecfault_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "24000", "-files", "6",
		"-rowGroupRows", "2000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	q := make([]float32, 64)
	for i := range q {
		q[i] = float32(i%7) * 0.1
	}
	preds := []string{"", `{"type":"eq","term":{"field-id":4},"value":"error"}`}
	want := map[string][]string{}
	var placed map[string]string
	for round := range 3 {
		for _, pred := range preds {
			resp, err := vectorPlan(t, c, name, q, 10, pred)
			if err != nil {
				t.Fatalf("healthy round %d, predicate %q: %v", round, pred, err)
			}
			if got := rowsOfPlan(resp); round == 0 {
				want[pred] = got
				if len(got) != 10 {
					t.Fatalf("healthy plan %q: %d rows", pred, len(got))
				}
			} else if !slices.Equal(got, want[pred]) {
				t.Fatalf("healthy round %d %q: rows %v, first round %v", round, pred, got, want[pred])
			}
			eps := endpointsOfPlan(resp)
			if len(eps) != 6 {
				t.Fatalf("healthy plan searched %d files: %v", len(eps), eps)
			}
			if placed == nil {
				placed = eps
			}
			for f, ep := range eps {
				if placed[f] != ep {
					t.Fatalf("round %d: %s searched on %s, before on %s", round, f, ep, placed[f])
				}
			}
		}
	}
	perEndpoint := map[string]int{}
	for _, ep := range placed {
		perEndpoint[ep]++
	}
	t.Logf("placement of 6 files: %v", perEndpoint)
	// The victim is the endpoint searching the most files.
	victim := -1
	for i, addr := range mc.VolumePushdownAddrs {
		if victim < 0 || perEndpoint[addr] > perEndpoint[mc.VolumePushdownAddrs[victim]] {
			victim = i
		}
	}
	dead := mc.VolumePushdownAddrs[victim]
	if perEndpoint[dead] == 0 {
		t.Fatalf("no file was placed on any endpoint: %v", placed)
	}
	t.Logf("killing volume server %s (pushdown %s, %d files placed there) while plans run", mc.VolumeServers[victim], dead, perEndpoint[dead])

	var (
		mu       sync.Mutex
		failure  string
		plans    int
		after    int
		moved    int
		stop     = make(chan struct{})
		done     = make(chan struct{})
		killedAt time.Time
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pred := preds[i%len(preds)]
			started := time.Now()
			resp, err := vectorPlan(t, c, name, q, 10, pred)
			mu.Lock()
			plans++
			switch {
			case err != nil:
				failure = fmt.Sprintf("plan %d (%q): %v", i, pred, err)
			case !slices.Equal(rowsOfPlan(resp), want[pred]):
				failure = fmt.Sprintf("plan %d (%q): rows %v, the healthy cluster's %v", i, pred, rowsOfPlan(resp), want[pred])
			case !killedAt.IsZero() && started.After(killedAt):
				after++
				for f, ep := range endpointsOfPlan(resp) {
					switch {
					case ep == dead:
						failure = fmt.Sprintf("plan %d: %s searched on the dead %s", i, f, dead)
					case placed[f] != dead && ep != placed[f]:
						failure = fmt.Sprintf("plan %d: %s moved from the live %s to %s", i, f, placed[f], ep)
					case placed[f] == dead:
						moved++
					}
				}
			}
			stop := failure != ""
			mu.Unlock()
			if stop {
				return
			}
		}
	}()
	time.Sleep(150 * time.Millisecond)
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	mc.Volumes[victim].Kill()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		enough := failure != "" || after >= 6
		mu.Unlock()
		if enough {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	<-done
	if failure != "" {
		t.Fatal(failure)
	}
	if after < 6 || moved == 0 {
		t.Fatalf("%d plans, %d after the kill, %d file searches moved off the dead endpoint", plans, after, moved)
	}
	// The plans in flight right after the kill found the endpoint dead and
	// retried its files on their other holder (the catalog says so).
	if log := harness.Tail(mc.Proc.Log, 2000); !strings.Contains(log, "SearchVectors on "+dead+" failed") {
		t.Fatalf("the catalog's log does not mention a retry after SearchVectors on %s failed", dead)
	}
	t.Logf("%d plans, %d after the kill; %d file searches moved to their other holder", plans, after, moved)
}
