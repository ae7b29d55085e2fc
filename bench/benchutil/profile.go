package benchutil

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

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
