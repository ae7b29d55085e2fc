package harness

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// ServerOptions tune StartServer.
type ServerOptions struct {
	ExtraArgs []string // more flags for `weed server`
	Env       []string
	Warehouse string // table bucket clients name (default "warehouse"); `weed server` creates none
}

// StartServer starts `weed server -s3 -pushdown`, the way the design says
// users run lakeweed (master, volume server, filer, S3 gateway with its
// Iceberg REST catalog and both pushdown services in one process), on
// ephemeral loopback ports in a temp dir, stopped by PID at cleanup. It
// waits until both pushdown services, S3 and the Iceberg catalog answer.
// Unlike `weed mini -tableBucket`, no table bucket exists afterwards.
func StartServer(t testing.TB, o ServerOptions) *Cluster {
	t.Helper()
	return startReady(t, "weed server -s3 -pushdown", func() (*Cluster, error) { return startServerOnce(t, o) })
}

func startServerOnce(t testing.TB, o ServerOptions) (*Cluster, error) {
	t.Helper()
	c, p := loopbackCluster(t, 11, o.Warehouse)
	args := []string{"server",
		"-dir=" + c.Dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + strconv.Itoa(p[0]), "-master.port.grpc=" + strconv.Itoa(p[1]), "-master.telemetry=false",
		"-master.volumeSizeLimitMB=256",
		"-volume.port=" + strconv.Itoa(p[2]), "-volume.port.grpc=" + strconv.Itoa(p[3]),
		"-filer.port=" + strconv.Itoa(p[4]), "-filer.port.grpc=" + strconv.Itoa(p[5]),
		"-s3", "-s3.port=" + strconv.Itoa(p[6]), "-s3.port.grpc=" + strconv.Itoa(p[7]),
		"-s3.port.iceberg=" + strconv.Itoa(p[8]), "-s3.port.lance=0",
		"-pushdown", "-pushdown.port=" + strconv.Itoa(p[9]), "-pushdown.volume.port=" + strconv.Itoa(p[10]),
	}
	args = append(args, o.ExtraArgs...)
	start := time.Now()
	c.Proc = StartProcess(t, c.Dir, "server", o.Env, args...)
	ctx, cancel := UntilExit(context.Background(), 90*time.Second, c.Proc)
	defer cancel()
	err := WaitHealthyEndpointsWith(ctx, c.CatalogAddr(), 1, nil)
	for _, a := range []string{c.S3Addr(), c.IcebergAddr()} {
		if err == nil {
			err = waitTCP(ctx, a)
		}
	}
	if err != nil {
		return c, withExitCause(ctx, err)
	}
	c.StartupTime = time.Since(start)
	return c, nil
}

// loopbackCluster lays a one-process cluster out in a temp dir on n free
// loopback ports p (master p[0] and p[1] for gRPC, volume p[2] p[3], filer
// p[4] p[5], S3 p[6] p[7], Iceberg p[8], catalog pushdown p[9], volume
// pushdown p[10]; the rest for the caller), warehouse defaulting to
// "warehouse".
func loopbackCluster(t testing.TB, n int, warehouse string) (*Cluster, []int) {
	if warehouse == "" {
		warehouse = "warehouse"
	}
	p := FreePorts(t, n)
	return &Cluster{Dir: t.TempDir(), IP: "127.0.0.1", MasterPort: p[0], VolumePort: p[2], FilerPort: p[4], FilerGrpcPort: p[5], S3Port: p[6],
		IcebergPort: p[8], CatalogPort: p[9], VolumePushdownPort: p[10], Warehouse: warehouse}, p
}
