package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// A cluster of separate processes: one master, three volume servers with
// -pushdown, one filer with S3, the Iceberg catalog and the catalog pushdown
// service. The catalog discovers the volume endpoints by itself and drops
// the one whose volume server stops.
func TestCatalogDiscoversVolumeEndpointsAndDropsOneThatStops(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	dir := t.TempDir()
	p := harness.FreePorts(t, 17)
	master := fmt.Sprintf("127.0.0.1:%d.%d", p[0], p[1])
	harness.StartProcess(t, dir, "master", nil, "master", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-port="+strconv.Itoa(p[0]), "-port.grpc="+strconv.Itoa(p[1]), "-mdir="+mkdir(t, dir, "m"), "-telemetry=false")

	var volumes []*harness.Process
	var volumeServers []string
	for i := 0; i < 3; i++ {
		port, grpcPort, pushdownPort := p[2+3*i], p[3+3*i], p[4+3*i]
		volumes = append(volumes, harness.StartProcess(t, dir, fmt.Sprintf("volume%d", i), nil, "volume",
			"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-port="+strconv.Itoa(port), "-port.grpc="+strconv.Itoa(grpcPort),
			"-dir="+mkdir(t, dir, fmt.Sprintf("v%d", i)), "-master="+master, "-preStopSeconds=1",
			"-pushdown", "-pushdown.volume.port="+strconv.Itoa(pushdownPort)))
		volumeServers = append(volumeServers, fmt.Sprintf("127.0.0.1:%d", port))
	}
	catalogPort := p[11]
	harness.StartProcess(t, dir, "filer", nil, "filer", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-port="+strconv.Itoa(p[12]), "-port.grpc="+strconv.Itoa(p[13]), "-master="+master,
		"-defaultStoreDir="+mkdir(t, dir, "f"),
		"-s3", "-s3.port="+strconv.Itoa(p[14]), "-s3.port.grpc="+strconv.Itoa(p[16]), "-s3.port.iceberg="+strconv.Itoa(p[15]), "-s3.port.lance=0",
		"-pushdown", "-pushdown.port="+strconv.Itoa(catalogPort))
	catalog := fmt.Sprintf("127.0.0.1:%d", catalogPort)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := harness.WaitHealthyEndpoints(ctx, catalog, 3); err != nil {
		t.Fatal(err)
	}
	sort.Strings(volumeServers)
	st := catalogStatus(t, catalog)
	if got := endpointServers(st); fmt.Sprint(got) != fmt.Sprint(volumeServers) {
		t.Fatalf("discovered volume servers %v, want %v", got, volumeServers)
	}

	// Stop the second volume server by PID (SIGTERM): its pushdown service
	// withdraws, and the catalog stops routing to it within seconds.
	stoppedServer := fmt.Sprintf("127.0.0.1:%d", p[5])
	stoppedAt := time.Now()
	stopped := volumes[1].Stop(30 * time.Second)
	t.Logf("volume server stopped in %s (exit: %v)", time.Since(stoppedAt).Round(100*time.Millisecond), stopped)
	// The pushdown service stopped before upstream's shutdown hooks ran.
	logText, _ := os.ReadFile(volumes[1].Log)
	ourStop := regexp.MustCompile(`pushdown: volume service \S+ stopped`).FindIndex(logText)
	theirs := strings.Index(string(logText), "volume server has been killed")
	if ourStop == nil || theirs < 0 || ourStop[0] > theirs {
		t.Fatalf("shutdown order: pushdown stop at %d, upstream hook at %d in %s", ourStop, theirs, volumes[1].Log)
	}
	if err := harness.WaitHealthyEndpoints(ctx, catalog, 2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = catalogStatus(t, catalog)
		if len(st.GetVolumeEndpoints()) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var want []string
	for _, vs := range volumeServers {
		if vs != stoppedServer {
			want = append(want, vs)
		}
	}
	if got := endpointServers(st); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after stopping %s the catalog lists %v, want %v", stoppedServer, got, want)
	}
	t.Logf("catalog dropped the stopped volume endpoint %s after stop", time.Since(stoppedAt).Round(100*time.Millisecond))

	// A killed volume server (no clean shutdown) stops being routed too.
	volumes[2].Kill()
	if err := harness.WaitHealthyEndpoints(ctx, catalog, 1); err != nil {
		t.Fatal(err)
	}
	out, _, err := harness.Weed(t, "pushdown", "status", "-catalog", catalog)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	t.Logf("status after kill:\n%s", out)
}

func mkdir(t *testing.T, parent, name string) string {
	d := filepath.Join(parent, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func catalogStatus(t *testing.T, addr string) *pushdown_pb.CatalogStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := pushdown_pb.NewPushdownCatalogClient(harness.Dial(t, addr)).Status(ctx, &pushdown_pb.StatusRequest{})
	if err != nil {
		t.Fatalf("catalog status: %v", err)
	}
	return st
}

func endpointServers(st *pushdown_pb.CatalogStatus) []string {
	var out []string
	for _, ep := range st.GetVolumeEndpoints() {
		out = append(out, ep.GetVolumeServer())
	}
	sort.Strings(out)
	return out
}
