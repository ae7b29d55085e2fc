package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MultiOptions tune StartMulti.
type MultiOptions struct {
	Volumes int // volume servers, each with a volume pushdown service (default 3)
	// Replication is the master's -defaultReplication ("" = upstream's
	// default, one copy): "001" keeps two copies of every volume on two
	// volume servers of the rack, so one server can die without losing
	// data.
	Replication string
	Warehouse   string // table bucket created at start (default "warehouse")
	// DistinctHosts puts volume server i (and its pushdown service) on its
	// own loopback address, 127.0.0.<2+i>, as separate hosts would be:
	// nothing of one is reachable at another's address.
	DistinctHosts bool
}

// MultiCluster is a cluster of separate processes: one master, Volumes
// volume servers with -pushdown, and a filer with S3, the Iceberg catalog and
// the catalog pushdown service. Its Cluster part reaches the filer's
// services (Proc is the filer).
type MultiCluster struct {
	Cluster
	Master  *Process
	Volumes []*Process
	// VolumeServers[i] is volume server i's host:port and
	// VolumePushdownAddrs[i] its volume pushdown service's.
	VolumeServers       []string
	VolumePushdownAddrs []string
	masterAddr          string // host:port.grpcPort, as weed's -master takes it
}

// StartMulti starts a MultiCluster on ephemeral loopback ports, creates the
// table bucket and waits until every volume pushdown service is healthy and
// S3 and the Iceberg catalog serve the bucket.
func StartMulti(t testing.TB, o MultiOptions) *MultiCluster {
	t.Helper()
	if o.Volumes <= 0 {
		o.Volumes = 3
	}
	if o.Warehouse == "" {
		o.Warehouse = "warehouse"
	}
	var mc *MultiCluster
	for attempt := 1; ; attempt++ {
		var err error
		if mc, err = startMultiProcesses(t, o); err == nil {
			break
		}
		if attempt < 3 && mc.lostPortRace() {
			t.Logf("a multi-node process lost a port to another process before binding it (attempt %d); starting again on new ports", attempt)
			mc.stopAll()
			continue
		}
		t.Fatalf("multi-node cluster: %v\n--- filer log ---\n%s", err, Tail(mc.Proc.Log, 40))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, a := range []string{mc.S3Addr(), mc.IcebergAddr()} {
		if err := waitTCP(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// Each later phase has a deadline of its own: on a loaded CI machine the
	// filer's registration alone has taken most of the first 90 s.
	bctx, bcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer bcancel()
	if err := createTableBucket(bctx, t, mc.Dir, mc.masterAddr, mc.FilerGrpcAddress(), o.Warehouse); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer wcancel()
	if err := waitTableBucket(wctx, &mc.Cluster); err != nil {
		t.Fatal(err)
	}
	return mc
}

// createTableBucket creates an Iceberg table bucket with `weed shell`'s
// s3tables.bucket, owned by the account anonymous S3 Tables requests act as
// (upstream's s3tables.DefaultAccountID), retrying while the filer is not yet
// registered with the master.
func createTableBucket(ctx context.Context, t testing.TB, dir, master, filer, name string) error {
	var last string
	for {
		cmd := exec.CommandContext(ctx, Binary(t), "shell", "-master="+master, "-filer="+filer)
		cmd.Dir = dir
		cmd.Env = cleanEnv(nil)
		cmd.Stdin = strings.NewReader("s3tables.bucket -create -name " + name + " -account 000000000000\nexit\n")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err == nil && strings.Contains(out.String(), "ARN:") {
			return nil
		}
		last = fmt.Sprintf("%v: %s", err, out.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("create table bucket %s: %s", name, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func subdir(t testing.TB, parent, name string) string {
	d := filepath.Join(parent, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// startMultiProcesses starts the master, the volume servers and the filer
// on new ports and waits until the catalog sees every volume endpoint
// healthy; the wait ends early when a process exits.
func startMultiProcesses(t testing.TB, o MultiOptions) (*MultiCluster, error) {
	t.Helper()
	dir := t.TempDir()
	p := FreePorts(t, 2+3*o.Volumes+5)
	mc := &MultiCluster{Cluster: Cluster{Dir: dir, IP: "127.0.0.1", MasterPort: p[0], Warehouse: o.Warehouse}}
	master := fmt.Sprintf("127.0.0.1:%d.%d", p[0], p[1])
	mc.masterAddr = master
	margs := []string{"master", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(p[0]), "-port.grpc=" + strconv.Itoa(p[1]),
		"-mdir=" + subdir(t, dir, "m"), "-telemetry=false"}
	if o.Replication != "" {
		margs = append(margs, "-defaultReplication="+o.Replication)
	}
	mc.Master = StartProcess(t, dir, "master", nil, margs...)
	for i := 0; i < o.Volumes; i++ {
		port, grpcPort, pushdownPort := p[2+3*i], p[3+3*i], p[4+3*i]
		ip := "127.0.0.1"
		if o.DistinctHosts {
			ip = fmt.Sprintf("127.0.0.%d", 2+i)
		}
		mc.Volumes = append(mc.Volumes, StartProcess(t, dir, fmt.Sprintf("volume%d", i), nil, "volume",
			"-ip="+ip, "-ip.bind="+ip, "-port="+strconv.Itoa(port), "-port.grpc="+strconv.Itoa(grpcPort),
			"-dir="+subdir(t, dir, fmt.Sprintf("v%d", i)), "-master="+master, "-preStopSeconds=1",
			"-pushdown", "-pushdown.volume.port="+strconv.Itoa(pushdownPort)))
		mc.VolumeServers = append(mc.VolumeServers, fmt.Sprintf("%s:%d", ip, port))
		mc.VolumePushdownAddrs = append(mc.VolumePushdownAddrs, fmt.Sprintf("%s:%d", ip, pushdownPort))
	}
	f := p[2+3*o.Volumes:]
	// The filer's embedded S3 gateway dials the filer's gRPC at its HTTP
	// port + 10000 whatever -port.grpc says (upstream), so the filer gets
	// such a pair.
	mc.FilerPort = FreePortWithGrpc(t)
	mc.FilerGrpcPort, mc.S3Port, mc.IcebergPort, mc.CatalogPort = mc.FilerPort+10000, f[1], f[2], f[3]
	// Every port weed binds is one handed out here: a port upstream derives
	// (the S3 gRPC port at S3's + 10000) may lie above the ephemeral floor,
	// where an outbound connection can take it first; Lance's default is a
	// fixed port two clusters would share.
	mc.Proc = StartProcess(t, dir, "filer", nil, "filer", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-port="+strconv.Itoa(mc.FilerPort), "-port.grpc="+strconv.Itoa(mc.FilerGrpcPort), "-master="+master,
		"-defaultStoreDir="+subdir(t, dir, "f"),
		"-s3", "-s3.port="+strconv.Itoa(mc.S3Port), "-s3.port.grpc="+strconv.Itoa(f[4]), "-s3.port.iceberg="+strconv.Itoa(mc.IcebergPort), "-s3.port.lance=0",
		"-pushdown", "-pushdown.port="+strconv.Itoa(mc.CatalogPort))

	ctx, cancel := UntilExit(context.Background(), 90*time.Second, mc.processes()...)
	defer cancel()
	if err := WaitHealthyEndpoints(ctx, mc.CatalogAddr(), o.Volumes); err != nil {
		return mc, withExitCause(ctx, err)
	}
	return mc, nil
}

// processes are the cluster's master, filer and volume servers.
func (mc *MultiCluster) processes() []*Process {
	return append([]*Process{mc.Master, mc.Proc}, mc.Volumes...)
}

// lostPortRace reports whether a process of the cluster exited because a
// port it was handed was taken before it could bind it.
func (mc *MultiCluster) lostPortRace() bool {
	return slices.ContainsFunc(mc.processes(), lostPortRace)
}

// stopAll stops every process of the cluster.
func (mc *MultiCluster) stopAll() {
	for _, p := range mc.processes() {
		_ = p.Stop(20 * time.Second)
	}
}
