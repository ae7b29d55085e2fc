package grpcutil

import (
	"context"
	"fmt"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
)

// Admission decides, before a request's body is read, whether a pushdown
// service takes it, and bounds what the service holds of requests at once:
//
//	HEADERS ─▶ tap: Authenticate(method, metadata) ── refused ─▶ PERMISSION_DENIED,
//	   │            (no token, signature or certificate            body never read
//	   │             the cluster accepts)
//	   ▼
//	stream goroutine: reserve MaxRequest bytes of MaxInflight ── waits (the
//	   │              client's flow-control window fills, nothing more is read)
//	   ▼
//	message read ─▶ reservation shrunk to the message's size, held until the
//	   │            call ends
//	   ▼
//	Caller(method, request) ─▶ the caller in the call's context (caller.go)
//	   │
//	   ▼
//	handler, under a deadline (Timeout) ─▶ call ends ─▶ reservation released
//
// The transport buffers at most RecvWindow bytes of a stream and
// RecvConnWindow of a connection before its reservation is made.
type Admission struct {
	// Service names the service in messages and logs.
	Service string
	// Authenticate refuses a caller from the call's metadata alone (nil:
	// every caller is taken to the handler, which authenticates).
	Authenticate func(ctx context.Context, method string, md metadata.MD) error
	// MaxRequest bounds one request message (a larger one is refused from
	// its length prefix).
	MaxRequest int
	// MaxInflight bounds the bytes of requests being read or served at
	// once (0: no bound).
	MaxInflight int64
	// Timeout is the deadline of a call of method (0: the client's only).
	Timeout func(method string) time.Duration
	// OnRefused, when set, hears of every call Authenticate refused (the
	// call never reaches the handlers that count their calls).
	OnRefused func(method string)
	// Caller establishes a call's caller from its metadata and request
	// before the handler runs (caller.go); handlers read it with CallerOf.
	// nil: no caller is established (handlers that need one refuse).
	Caller func(ctx context.Context, method string, req proto.Message) (any, error)

	once   sync.Once
	budget *semaphore.Weighted
	held   atomic.Int64
}

// Server windows for what clients send: static (no BDP growth), so an
// unread request costs at most this much.
const (
	RecvWindow     = 1 << 20
	RecvConnWindow = 4 << 20
)

func (a *Admission) init() {
	a.once.Do(func() {
		if a.MaxInflight > 0 {
			a.budget = semaphore.NewWeighted(a.MaxInflight)
		}
	})
}

// Held is the bytes of requests reserved now.
func (a *Admission) Held() int64 { return a.held.Load() }

// Options are the server options that apply a's bounds alone (static
// receive windows, the budget of requests in flight, the tap when
// Authenticate is set), for a server with interceptors of its own (Flight
// SQL); ServerOptions includes them.
func (a *Admission) Options() []grpc.ServerOption { return a.options() }

func (a *Admission) options() []grpc.ServerOption {
	a.init()
	opts := []grpc.ServerOption{
		grpc.InitialWindowSize(RecvWindow),
		grpc.InitialConnWindowSize(RecvConnWindow),
		grpc.StatsHandler(admissionStats{a}),
	}
	if a.Authenticate != nil {
		opts = append(opts, grpc.InTapHandle(a.tap))
	}
	return opts
}

// tap runs on the connection's reader before the request's body is read.
func (a *Admission) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	start := time.Now()
	method := methodName(info.FullMethodName)
	if err := a.Authenticate(ctx, method, info.Header); err != nil {
		st := ToStatus(err)
		if s, ok := status.FromError(st); ok && s.Code() == codes.Internal {
			st = status.Error(codes.PermissionDenied, s.Message())
		}
		// counted as the handlers count a call they refuse
		metrics.ObserveRPC(info.FullMethodName, status.Code(st), time.Since(start))
		if a.OnRefused != nil {
			a.OnRefused(method)
		}
		return ctx, st
	}
	return ctx, nil
}

func methodName(full string) string {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '/' {
			return full[i+1:]
		}
	}
	return full
}

// reservation is one call's share of MaxInflight.
type reservation struct {
	a    *Admission
	mu   sync.Mutex
	held int64
}

func (r *reservation) set(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case n < r.held:
		r.a.budget.Release(r.held - n)
	case n > r.held:
		return // never grows past what was acquired
	}
	r.a.held.Add(n - r.held)
	r.held = n
}

type reservationKey struct{}

// admissionStats reserves and releases a call's bytes at the points only
// a stats handler sees: after the headers, before the body is read (in
// the call's own goroutine, so a wait holds back that call alone), and
// once the message is read.
type admissionStats struct{ a *Admission }

func (s admissionStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if s.a.budget == nil {
		return ctx
	}
	return context.WithValue(ctx, reservationKey{}, &reservation{a: s.a})
}

func (s admissionStats) HandleRPC(ctx context.Context, st stats.RPCStats) {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil {
		return
	}
	switch x := st.(type) {
	case *stats.InHeader:
		n := int64(s.a.MaxRequest)
		if n <= 0 || n > s.a.MaxInflight {
			n = s.a.MaxInflight
		}
		if !s.a.budget.TryAcquire(n) {
			t0 := time.Now()
			if err := s.a.budget.Acquire(ctx, n); err != nil {
				return // the call ended while it waited
			}
			glog.V(1).Infof("pushdown %s: a call waited %v for %d MiB of the %d MiB of requests in flight (-pushdown.maxInflightMB)",
				s.a.Service, time.Since(t0).Round(time.Millisecond), n>>20, s.a.MaxInflight>>20)
		}
		r.mu.Lock()
		r.held = n
		r.mu.Unlock()
		s.a.held.Add(n)
		context.AfterFunc(ctx, func() { r.set(0) })
	case *stats.InPayload:
		r.set(int64(max(x.Length, x.WireLength)))
	}
}

func (admissionStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (admissionStats) HandleConn(context.Context, stats.ConnStats)                       {}

// deadline gives a call the admission's deadline for its method (a
// client's earlier one stays).
func (a *Admission) deadline(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if a.Timeout != nil {
		if d := a.Timeout(methodName(info.FullMethod)); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
			resp, err := handler(ctx, req)
			if err != nil && ctx.Err() == context.DeadlineExceeded {
				err = status.Error(codes.DeadlineExceeded, fmt.Sprintf("%s: the call ran past its deadline of %v (-pushdown.requestTimeout)", methodName(info.FullMethod), d))
			}
			return resp, err
		}
	}
	return handler(ctx, req)
}

// streamDeadline is deadline for streaming calls.
func (a *Admission) streamDeadline(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if a.Timeout == nil {
		return handler(srv, ss)
	}
	d := a.Timeout(methodName(info.FullMethod))
	if d <= 0 {
		return handler(srv, ss)
	}
	ctx, cancel := context.WithTimeout(ss.Context(), d)
	defer cancel()
	err := handler(srv, &streamWithContext{ServerStream: ss, ctx: ctx})
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = status.Error(codes.DeadlineExceeded, fmt.Sprintf("%s: the call ran past its deadline of %v (-pushdown.requestTimeout)", methodName(info.FullMethod), d))
	}
	return err
}

// streamWithContext is a server stream whose handler sees ctx.
type streamWithContext struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *streamWithContext) Context() context.Context { return s.ctx }

// ReturnMemoryAfterBursts hands memory back to the operating system once
// a burst of large requests is over. Every few seconds it looks at the
// heap: when it holds more than threshold bytes mapped but free, or — no
// collection having run since the last look, so nothing allocates — more
// than threshold bytes of objects above what the last collection found
// live (the burst's garbage), it collects and returns them. Go would
// otherwise keep them until its two-minute forced collection and the
// scavenger's slow pace. One per process.
func ReturnMemoryAfterBursts(ctx context.Context, threshold int64, every time.Duration) {
	returnMemoryOnce.Do(func() {
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			last := readHeap()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				h := readHeap()
				garbage := int64(h.objects) - int64(h.live)
				if int64(h.free) > threshold || (h.cycles == last.cycles && garbage > threshold) {
					debug.FreeOSMemory()
					MemoryReturns.Add(1)
					h = readHeap()
				}
				last = h
			}
		}()
	})
}

// MemoryReturns counts the times memory was handed back after a burst.
var MemoryReturns atomic.Int64

var returnMemoryOnce sync.Once

type heapStats struct{ free, objects, live, cycles uint64 }

var heapSamples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
}

func readHeap() heapStats {
	s := make([]rtmetrics.Sample, len(heapSamples))
	copy(s, heapSamples)
	rtmetrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return heapStats{free: v(0), objects: v(1), live: v(2), cycles: v(3)}
}
