// Package harness starts real lakeweed clusters for tests: `bin/weed mini
// -pushdown` (or separate master / volume / filer processes) as subprocesses
// on ephemeral loopback ports in a temp dir, stopped by PID, with clients for
// S3 (aws-sdk-go-v2), the Iceberg REST catalog (iceberg-go) and both
// pushdown services (gRPC).
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/netport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Binary returns the weed binary under test: $WEED_BINARY, else bin/weed at
// the repository root. Tests fail (never skip) when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("WEED_BINARY"); b != "" {
		return b
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("locate repository root: %v", err)
	}
	b := filepath.Join(root, "bin", "weed")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("weed binary not found at %s: run `make build` (or set WEED_BINARY)", b)
	}
	return b
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// SharedDir returns ../shared (test data that exists here and in CI but not in
// a user's clone), or "" when absent.
func SharedDir() string {
	root, err := RepoRoot()
	if err != nil {
		return ""
	}
	d := filepath.Join(filepath.Dir(root), "shared")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// RequireShared returns a path under ../shared or skips the test, saying why.
func RequireShared(t testing.TB, rel string) string {
	t.Helper()
	d := SharedDir()
	if d == "" {
		t.Skipf("skipping: ../shared (test data outside the repository) is absent; it exists in CI and in the development sandbox only")
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent", p)
	}
	return p
}

var (
	portMu sync.Mutex
	// handedOut holds every port this test process has handed out. A port
	// is released to the kernel before the process meant to bind it has
	// started, so without this a later allocation in the same test binary
	// could be given the same port (the kernel reuses a just-closed one).
	handedOut = map[int]bool{}
)

// FreePorts returns n distinct free loopback ports, none handed out before
// in this process.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	return freePortsLocked(t, n, false)
}

// FreePortWithGrpc returns a free loopback port p whose p+10000 is free too
// (upstream derives some gRPC ports that way); both are reserved.
func FreePortWithGrpc(t testing.TB) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	return freePortsLocked(t, 1, true)[0]
}

// freePortsLocked hands out ports below the kernel's ephemeral floor
// (netport): a port the kernel chose for ":0" could be taken by any
// outbound connection — the weed process's own dials to its master and
// filer included — between this release and weed's bind, and weed exits
// when a bind fails.
func freePortsLocked(t testing.TB, n int, withGrpc bool) []int {
	t.Helper()
	headroom := 0
	if withGrpc {
		headroom = 10000
	}
	skip := func(p int) bool {
		// Keep every port low enough that upstream's +10000 rules stay valid.
		if p > 55000 || handedOut[p] {
			return true
		}
		return withGrpc && (handedOut[p+10000] || !netport.Listenable("127.0.0.1", p+10000))
	}
	var ports []int
	for len(ports) < n {
		p, below, err := netport.Free("127.0.0.1", headroom, skip)
		if err != nil {
			t.Fatalf("allocate %d loopback ports: %v", n, err)
		}
		if !below {
			t.Logf("port %d is at or above the ephemeral floor %d: an outbound connection may claim it before weed binds it", p, netport.EphemeralFloor())
		}
		handedOut[p] = true
		if withGrpc {
			handedOut[p+10000] = true
		}
		ports = append(ports, p)
	}
	return ports
}

// Process is one weed subprocess.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	Log  string
	done chan struct{}
	err  error
}

// cleanEnv keeps only what a weed process needs: upstream flags also read
// unprefixed environment variables (PORT, DIR, IP...), so a stray variable
// must not reconfigure the cluster under test.
func cleanEnv(extra []string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	return append(env, extra...)
}

// StartProcess runs `weed <args>` in dir with its output in dir/<name>.log.
func StartProcess(t testing.TB, dir, name string, env []string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create %s: %v", logPath, err)
	}
	cmd := exec.Command(Binary(t), append([]string{"-logdir=" + dir}, args...)...)
	cmd.Dir = dir
	cmd.Stdout = lf
	cmd.Stderr = lf
	cmd.Env = cleanEnv(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(20 * time.Second)
		if t.Failed() {
			t.Logf("--- tail of %s ---\n%s", logPath, Tail(logPath, 40))
		}
	})
	return p
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the process by PID and waits up to timeout, then
// kills its process group.
func (p *Process) Stop(timeout time.Duration) error {
	if !p.Running() {
		return p.err
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return p.err
}

// Kill stops the process with SIGKILL (no clean shutdown).
func (p *Process) Kill() {
	if p.Running() {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Wait waits for the process to exit by itself.
func (p *Process) Wait(timeout time.Duration) (exited bool, err error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(timeout):
		return false, nil
	}
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Cluster is a running `weed mini -pushdown`.
type Cluster struct {
	Dir                string
	IP                 string
	MasterPort         int
	VolumePort         int
	FilerPort          int
	FilerGrpcPort      int
	S3Port             int
	IcebergPort        int
	CatalogPort        int
	VolumePushdownPort int
	Warehouse          string
	AccessKey          string // S3 credentials clients use (empty: anonymous)
	SecretKey          string
	Proc               *Process
	StartupTime        time.Duration
	dial               grpc.DialOption
}

// MiniOptions tune StartMini.
type MiniOptions struct {
	ExtraArgs []string // more flags for `weed mini`
	Env       []string
	Warehouse string // table bucket created at start (default "warehouse")
	// Setup runs in the cluster directory before the process starts (write
	// a security.toml there, say: weed reads it from its working directory).
	Setup func(dir string)
	// Dial is how readiness probes reach the pushdown services (default:
	// plaintext).
	Dial grpc.DialOption
	// AccessKey and SecretKey are the S3 credentials the cluster's clients
	// use (for clusters started with S3 identities, e.g. -s3.config).
	AccessKey, SecretKey string
	// Dir runs the cluster on an existing directory (restart a cluster on
	// its data, on new ports) instead of a new temporary one.
	Dir string
}

// StartMini starts `weed mini -pushdown` on ephemeral loopback ports and
// waits until S3, the Iceberg catalog and both pushdown services answer.
func StartMini(t testing.TB, o MiniOptions) *Cluster {
	t.Helper()
	return startReady(t, "weed mini -pushdown", func() (*Cluster, error) { return startMiniOnce(t, o) })
}

// startReady runs start until its cluster is ready, starting it again on
// new ports (at most twice, logged) when its process died of a port taken
// before it could bind it; any other failure fails the test with the log.
func startReady(t testing.TB, what string, start func() (*Cluster, error)) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := start()
		if err == nil {
			return c
		}
		if attempt < 3 && lostPortRace(c.Proc) {
			t.Logf("%s lost a port to another process before binding it (attempt %d); starting again on new ports:\n%s", what, attempt, Tail(c.Proc.Log, 3))
			continue
		}
		t.Fatalf("%s did not become ready: %v\n--- log ---\n%s", what, err, Tail(c.Proc.Log, 60))
	}
}

func startMiniOnce(t testing.TB, o MiniOptions) (*Cluster, error) {
	t.Helper()
	c, p := loopbackCluster(t, 16, o.Warehouse)
	c.AccessKey, c.SecretKey = o.AccessKey, o.SecretKey
	if o.Dir != "" {
		c.Dir = o.Dir
	}
	args := []string{"mini",
		"-dir=" + c.Dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + strconv.Itoa(p[0]), "-master.port.grpc=" + strconv.Itoa(p[1]),
		"-volume.port=" + strconv.Itoa(p[2]), "-volume.port.grpc=" + strconv.Itoa(p[3]),
		"-filer.port=" + strconv.Itoa(p[4]), "-filer.port.grpc=" + strconv.Itoa(p[5]),
		"-s3.port=" + strconv.Itoa(p[6]), "-s3.port.grpc=" + strconv.Itoa(p[7]),
		"-s3.port.iceberg=" + strconv.Itoa(p[8]), "-s3.port.lance=0",
		"-admin.port=" + strconv.Itoa(p[11]), "-admin.port.grpc=" + strconv.Itoa(p[12]), "-admin.port.legacy=0", "-admin.ui=false",
		"-webdav=false", "-master.telemetry=false",
		"-tableBucket=" + c.Warehouse,
		"-pushdown", "-pushdown.port=" + strconv.Itoa(p[9]), "-pushdown.volume.port=" + strconv.Itoa(p[10]),
	}
	args = append(args, o.ExtraArgs...)
	if o.Setup != nil {
		o.Setup(c.Dir)
	}
	c.dial = o.Dial
	start := time.Now()
	c.Proc = StartProcess(t, c.Dir, "mini", o.Env, args...)
	ctx, cancel := UntilExit(context.Background(), 90*time.Second, c.Proc)
	defer cancel()
	if err := c.WaitReady(ctx, 1); err != nil {
		return c, withExitCause(ctx, err)
	}
	c.StartupTime = time.Since(start)
	return c, nil
}

// UntilExit returns a context that ends after timeout or as soon as one
// of procs exits, whichever is first, so a wait for readiness stops at once
// when a process died instead of running out its whole timeout.
func UntilExit(parent context.Context, timeout time.Duration, procs ...*Process) (context.Context, context.CancelFunc) {
	ctx, cancelTimeout := context.WithTimeout(parent, timeout)
	ctx, cancel := context.WithCancelCause(ctx)
	for _, p := range procs {
		go func() {
			select {
			case <-p.done:
				cancel(&exitedError{name: p.Name, err: p.err})
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled); cancelTimeout() }
}

// exitedError is the cause of an UntilExit context a process's exit ended.
type exitedError struct {
	name string
	err  error
}

func (e *exitedError) Error() string { return fmt.Sprintf("%s exited: %v", e.name, e.err) }

// withExitCause is err naming the process whose exit ended ctx's wait, if
// one did (else err unchanged).
func withExitCause(ctx context.Context, err error) error {
	var ex *exitedError
	if errors.As(context.Cause(ctx), &ex) {
		return fmt.Errorf("%w (%v)", err, ex)
	}
	return err
}

// lostPortRace reports whether p exited because a port it was handed was
// taken before it could bind it (the one failure starting again on new
// ports cures).
func lostPortRace(p *Process) bool {
	if p == nil || p.Running() {
		return false
	}
	b, err := os.ReadFile(p.Log)
	return err == nil && bytes.Contains(b, []byte("bind: address already in use"))
}

// WaitReady waits until the catalog pushdown service reports at least
// volumes healthy volume endpoints and S3 and the Iceberg catalog answer.
func (c *Cluster) WaitReady(ctx context.Context, volumes int) error {
	if err := waitHealthy(ctx, c.CatalogAddr(), volumes, c.dial, c.Endpoints()); err != nil {
		return err
	}
	for _, a := range []string{c.S3Addr(), c.IcebergAddr()} {
		if err := waitTCP(ctx, a); err != nil {
			return err
		}
	}
	return waitTableBucket(ctx, c)
}

func waitTCP(ctx context.Context, addr string) error {
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not reachable: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitHealthyEndpoints polls the catalog's Status until exactly n volume
// endpoints are healthy.
func WaitHealthyEndpoints(ctx context.Context, catalog string, n int) error {
	return WaitHealthyEndpointsWith(ctx, catalog, n, nil)
}

// WaitHealthyEndpointsWith is WaitHealthyEndpoints with a dial option.
func WaitHealthyEndpointsWith(ctx context.Context, catalog string, n int, dial grpc.DialOption) error {
	return waitHealthy(ctx, catalog, n, dial, lakeclient.Endpoints{})
}

// waitHealthy polls Status signed with as's credentials (none: unsigned).
func waitHealthy(ctx context.Context, catalog string, n int, dial grpc.DialOption, as lakeclient.Endpoints) error {
	if dial == nil {
		dial = grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	conn, err := grpc.NewClient(catalog, dial)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pushdown_pb.NewPushdownCatalogClient(conn)
	last := ""
	for {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req := &pushdown_pb.StatusRequest{}
		st, err := (*pushdown_pb.CatalogStatus)(nil), error(nil)
		if sctx, err = as.SignCall(sctx, catalog, "Status", req); err == nil {
			st, err = client.Status(sctx, req)
		}
		cancel()
		if err == nil {
			healthy := 0
			for _, ep := range st.GetVolumeEndpoints() {
				if ep.GetHealthy() {
					healthy++
				}
			}
			if healthy == n {
				return nil
			}
			last = fmt.Sprintf("%d healthy volume endpoints of %d registered", healthy, len(st.GetVolumeEndpoints()))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("catalog %s: waiting for %d healthy volume endpoints: last saw %s", catalog, n, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) addr(port int) string { return net.JoinHostPort(c.IP, strconv.Itoa(port)) }

// CatalogAddr is the catalog pushdown service's host:port.
func (c *Cluster) CatalogAddr() string { return c.addr(c.CatalogPort) }

// VolumePushdownAddr is the volume pushdown service's host:port.
func (c *Cluster) VolumePushdownAddr() string { return c.addr(c.VolumePushdownPort) }

// S3Addr is the S3 gateway's host:port.
func (c *Cluster) S3Addr() string { return c.addr(c.S3Port) }

// S3Endpoint is the S3 gateway URL.
func (c *Cluster) S3Endpoint() string { return "http://" + c.S3Addr() }

// IcebergAddr is the Iceberg REST catalog's host:port.
func (c *Cluster) IcebergAddr() string { return c.addr(c.IcebergPort) }

// IcebergURI is the Iceberg REST catalog URL.
func (c *Cluster) IcebergURI() string { return "http://" + c.IcebergAddr() }

// FilerAddr is the filer's HTTP host:port.
func (c *Cluster) FilerAddr() string { return c.addr(c.FilerPort) }

// FilerGrpcAddress is the filer's address in SeaweedFS's host:port.grpcPort form.
func (c *Cluster) FilerGrpcAddress() string {
	return fmt.Sprintf("%s:%d.%d", c.IP, c.FilerPort, c.FilerGrpcPort)
}

// MasterAddr is the master's HTTP host:port.
func (c *Cluster) MasterAddr() string { return c.addr(c.MasterPort) }

// Weed runs a weed client command to completion and returns its stdout,
// stderr and error.
func Weed(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return WeedIn(t, "", args...)
}

// WeedIn is Weed with the working directory dir (where weed looks for
// security.toml).
func WeedIn(t testing.TB, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return WeedEnv(t, dir, nil, args...)
}

// WeedEnv is WeedIn with extra environment variables ("K=V").
func WeedEnv(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(env)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// Dial returns a gRPC client connection to a pushdown service.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Catalog returns a PushdownCatalog client of the cluster.
func (c *Cluster) Catalog(t testing.TB) pushdown_pb.PushdownCatalogClient {
	return pushdown_pb.NewPushdownCatalogClient(Dial(t, c.CatalogAddr()))
}

// Volume returns a PushdownVolume client of the cluster's volume server.
func (c *Cluster) Volume(t testing.TB) pushdown_pb.PushdownVolumeClient {
	return pushdown_pb.NewPushdownVolumeClient(Dial(t, c.VolumePushdownAddr()))
}

// ProcessRSSKiB returns the resident set size of the cluster process.
func (c *Cluster) ProcessRSSKiB() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Proc.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
