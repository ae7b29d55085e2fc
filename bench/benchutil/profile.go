package benchutil

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// ProfiledMini starts `weed mini` with its debug (pprof) listener for a
// profile test, which is skipped unless LAKEWEED_BENCH and
// LAKEWEED_BENCH_PROFILE (the output path) are set; it returns the
// cluster, the debug port and the output path.
func ProfiledMini(t *testing.T) (*harness.Cluster, int, string) {
	t.Helper()
	out := os.Getenv("LAKEWEED_BENCH_PROFILE")
	if os.Getenv("LAKEWEED_BENCH") == "" || out == "" {
		t.Skip("profile: set LAKEWEED_BENCH=1 and LAKEWEED_BENCH_PROFILE")
	}
	port := harness.FreePorts(t, 1)[0]
	return harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-debug", "-debug.port=" + strconv.Itoa(port)}}), port, out
}

// ClusterCPUProfile takes a CPU profile of the cluster's processes over
// seconds from its debug listener.
func ClusterCPUProfile(t *testing.T, port, seconds int) []byte {
	t.Helper()
	b, err := FetchCPUProfile(port, seconds)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FetchCPUProfile is ClusterCPUProfile returning its error, for a caller
// off the test's goroutine.
func FetchCPUProfile(port, seconds int) ([]byte, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, seconds))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// WarmProfile is what ProfileWarm measured: the queries' latencies
// (sorted) and the CPU they took, this process's and the cluster's, per
// query.
type WarmProfile struct {
	Latencies             []float64 // ms, ascending
	SelfCPUMs, ClusterCPU float64   // ms a query
}

// P50 is the median latency, ms.
func (w WarmProfile) P50() float64 { return Median(w.Latencies) }

// ProfileWarm runs run over and over for 10 s under a CPU profile of this
// process (written to selfOut; its allocations beside it, before and after:
// selfOut.allocs0 and selfOut.allocs, read with pprof -sample_index=alloc_space
// -diff_base selfOut.allocs0 selfOut.allocs) while taking the cluster's over the same
// seconds from its debug listener on port (written to clusterOut);
// clusterPid is the cluster's process, for its CPU time.
func ProfileWarm(t *testing.T, port, clusterPid int, selfOut, clusterOut string, run func()) WarmProfile {
	t.Helper()
	writeAllocs(t, selfOut, "allocs0") // collects garbage first, outside the CPU profile
	f, err := os.Create(selfOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	self0, cluster0 := SelfCPU(), ProcCPU(clusterPid)
	cluster := make(chan []byte, 1)
	go func() {
		b, err := FetchCPUProfile(port, 10)
		if err != nil {
			t.Logf("cluster profile: %v", err)
		}
		cluster <- b
	}()
	var lat []float64
	for t0 := time.Now(); time.Since(t0) < 10*time.Second; {
		t1 := time.Now()
		run()
		lat = append(lat, float64(time.Since(t1).Microseconds())/1000)
	}
	pprof.StopCPUProfile()
	self, clusterCPU := SelfCPU()-self0, ProcCPU(clusterPid)-cluster0
	writeAllocs(t, selfOut, "allocs") // after the CPU figures: its collection is not the queries'
	if err := os.WriteFile(clusterOut, <-cluster, 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	n := float64(len(lat))
	return WarmProfile{Latencies: lat, SelfCPUMs: float64(self.Microseconds()) / 1000 / n, ClusterCPU: float64(clusterCPU.Microseconds()) / 1000 / n}
}

// writeAllocs writes this process's allocation profile to out.suffix.
func writeAllocs(t *testing.T, out, suffix string) {
	t.Helper()
	runtime.GC() // the profile holds allocations up to the last GC
	f, err := os.Create(out + "." + suffix)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}
