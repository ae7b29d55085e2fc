package grpcutil

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// volumeStub answers ReadRanges after release is closed, counting the
// calls running at once.
type volumeStub struct {
	pushdown_pb.UnimplementedPushdownVolumeServer
	running, most atomic.Int64
	release       chan struct{}
	deadline      chan time.Duration
}

func (s *volumeStub) ReadRanges(ctx context.Context, req *pushdown_pb.ReadRangesRequest) (*pushdown_pb.ReadRangesResponse, error) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	if d, ok := ctx.Deadline(); ok && s.deadline != nil {
		s.deadline <- time.Until(d)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &pushdown_pb.ReadRangesResponse{}, nil
}

func serve(t *testing.T, adm *Admission, stub *volumeStub) pushdown_pb.PushdownVolumeClient {
	t.Helper()
	return serveCaller(t, adm, stub)
}

// serveCaller serves srv with adm's options over an in-memory listener.
func serveCaller(t *testing.T, adm *Admission, srv pushdown_pb.PushdownVolumeServer) pushdown_pb.PushdownVolumeClient {
	t.Helper()
	return pushdown_pb.NewPushdownVolumeClient(serveConn(t, adm, srv))
}

// serveConn serves srv with adm's options over an in-memory listener and
// returns a connection to it.
func serveConn(t *testing.T, adm *Admission, srv pushdown_pb.PushdownVolumeServer) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(ServerOptions("grpc.volume", adm)...)
	pushdown_pb.RegisterPushdownVolumeServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///stub", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Calls the tap refuses before their method is looked up are counted, but
// a made-up method name mints no label value: every such call is counted
// under "unknown", however many names a caller invents.
func TestCallsRefusedUnderMadeUpMethodNamesAddNoMetricSeries(t *testing.T) {
	adm := &Admission{Service: "test", MaxRequest: 1 << 20, MaxInflight: 64 << 20,
		Authenticate: func(ctx context.Context, method string, md metadata.MD) error {
			return perr.New(perr.PermissionDenied, "unsigned")
		}}
	conn := serveConn(t, adm, &volumeStub{})
	reg := prometheus.NewRegistry()
	metrics.Register(reg)
	series := func() map[string]bool {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range fams {
			if f.GetName() != "SeaweedFS_pushdown_rpc_requests_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "method" {
						seen[l.GetValue()] = true
					}
				}
			}
		}
		return seen
	}
	before := series()
	for i := 0; i < 50; i++ {
		err := conn.Invoke(context.Background(), fmt.Sprintf("/evil.Service/Made%d", i), &pushdown_pb.ReadRangesRequest{}, &pushdown_pb.ReadRangesResponse{})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("a made-up method: %v, want PERMISSION_DENIED from the tap", err)
		}
	}
	after := series()
	for m := range after {
		if !before[m] && m != "unknown" {
			t.Fatalf("a refused made-up method minted the label value %q", m)
		}
	}
	if !after["unknown"] {
		t.Fatal("the refused calls were not counted under unknown")
	}
}

func TestACallerRefusedFromItsMetadataNeverReachesTheHandler(t *testing.T) {
	var asked atomic.Int64
	adm := &Admission{Service: "test", MaxRequest: 16 << 20, MaxInflight: 64 << 20,
		Authenticate: func(ctx context.Context, method string, md metadata.MD) error {
			asked.Add(1)
			if len(md.Get("authorization")) == 0 {
				return perr.New(perr.PermissionDenied, "%s: unsigned", method)
			}
			return nil
		}}
	stub := &volumeStub{release: make(chan struct{})}
	close(stub.release)
	c := serve(t, adm, stub)
	body := &pushdown_pb.ReadRangesRequest{Path: string(make([]byte, 8<<20))}
	_, err := c.ReadRanges(context.Background(), body)
	if status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != "ReadRanges: unsigned" {
		t.Fatalf("an unsigned call: %v; want PERMISSION_DENIED from the tap", err)
	}
	if stub.most.Load() != 0 {
		t.Fatal("the handler ran for a refused caller")
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "x")
	if _, err := c.ReadRanges(ctx, &pushdown_pb.ReadRangesRequest{}); err != nil {
		t.Fatalf("an admitted call: %v", err)
	}
	if asked.Load() != 2 {
		t.Fatalf("Authenticate asked %d times, want once a call", asked.Load())
	}
}

// With room for two full-size requests in flight, the third waits before
// its body is read, and runs once one of the first ends.
func TestRequestsPastTheInflightBudgetWaitUntilRoomIsFreed(t *testing.T) {
	adm := &Admission{Service: "test", MaxRequest: 4 << 20, MaxInflight: 8 << 20}
	stub := &volumeStub{release: make(chan struct{})}
	c := serve(t, adm, stub)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.ReadRanges(context.Background(), &pushdown_pb.ReadRangesRequest{Path: string(make([]byte, 3<<20))})
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for stub.running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := stub.running.Load(); got != 2 {
		t.Fatalf("%d calls running with room for 2", got)
	}
	if held := adm.Held(); held > adm.MaxInflight {
		t.Fatalf("%d bytes held, over the budget of %d", held, adm.MaxInflight)
	}
	close(stub.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if stub.most.Load() > 2 {
		t.Fatalf("%d calls ran at once, with room for 2", stub.most.Load())
	}
	deadline = time.Now().Add(2 * time.Second)
	for adm.Held() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if adm.Held() != 0 {
		t.Fatalf("%d bytes still held after every call ended", adm.Held())
	}
}

func TestACallRunsUnderItsMethodsDeadline(t *testing.T) {
	adm := &Admission{Service: "test", MaxRequest: 1 << 20, Timeout: func(m string) time.Duration {
		if m == "ReadRanges" {
			return 50 * time.Millisecond
		}
		return 0
	}}
	stub := &volumeStub{release: make(chan struct{}), deadline: make(chan time.Duration, 1)}
	c := serve(t, adm, stub)
	_, err := c.ReadRanges(context.Background(), &pushdown_pb.ReadRangesRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call past its deadline: %v", err)
	}
	if d := <-stub.deadline; d > 50*time.Millisecond || d <= 0 {
		t.Fatalf("the handler saw a deadline %v away, want within 50ms", d)
	}
}
