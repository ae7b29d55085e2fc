// Package grpcutil holds what both pushdown services share at the gRPC
// boundary: TLS from the cluster's security.toml, client connections, and
// the one place where error kinds become status codes.
package grpcutil

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// MaxMessageBytes bounds request and response messages of both services.
const MaxMessageBytes = 256 << 20

// messageBuffers hold the messages the pushdown services and their clients
// send and receive: gRPC's default pool has no size between 32 KiB and
// 1 MiB, so each message a little over 32 KiB (a ReadRows answer of a few
// thousand rows) took a 1 MiB buffer, zeroed whole on every Get — a tenth
// of a warm exact-rows query's CPU. A size class per power of two up to
// 4 MiB zeroes at most twice the message.
var messageBuffers = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)
	if err != nil { // the exponents are constants: never
		return mem.DefaultBufferPool()
	}
	return p
}()

// ServerOptions returns the gRPC server options for a pushdown service
// admitting requests as adm says: at most adm.MaxRequest bytes each (a
// larger one is refused from its length prefix, before it is read),
// callers refused from their metadata alone, requests in flight bounded,
// deadlines. TLS follows SeaweedFS's security.toml: the
// [grpc.<component>] cert/key, with client certificates checked against
// [grpc] ca when configured.
func ServerOptions(component string, adm *Admission) []grpc.ServerOption {
	unaryCaller, streamCaller := adm.callerInterceptors()
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(adm.MaxRequest),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ChainUnaryInterceptor(UnaryMetricsInterceptor, UnaryErrorInterceptor, adm.deadline, unaryCaller),
		grpc.ChainStreamInterceptor(StreamMetricsInterceptor, StreamErrorInterceptor, adm.streamDeadline, streamCaller),
		experimental.BufferPool(messageBuffers),
		serverCodec,
		// calls run on reused goroutines whose stacks have grown, not on a
		// new goroutine each (stack growth was ~8% of a warm side-index
		// LIMIT's cluster CPU); when every worker is busy gRPC starts one
		grpc.NumStreamWorkers(streamWorkers()),
	}
	opts = append(opts, adm.options()...)
	tlsOpt, _ := security.LoadServerTLS(util.GetViper(), component)
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	return opts
}

// TLSEnabled reports whether security.toml configures TLS for component.
func TLSEnabled(component string) bool {
	v := util.GetViper()
	return v.GetString(component+".cert") != "" && v.GetString(component+".key") != ""
}

// ClientDialOption returns the dial option clients of the pushdown services
// use ([grpc.client] in security.toml, plaintext when absent).
func ClientDialOption() grpc.DialOption {
	return security.LoadClientTLS(util.GetViper(), "grpc.client")
}

// UnaryErrorInterceptor maps returned errors to status codes and turns a
// handler panic into INTERNAL instead of killing the process.
func UnaryErrorInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			glog.Errorf("pushdown: panic in %s: %v", info.FullMethod, r)
			resp, err = nil, status.Error(codes.Internal, bounded(fmt.Sprintf("internal error in %s: %v", info.FullMethod, r)))
		}
	}()
	resp, err = handler(ctx, req)
	if err != nil {
		err = ToStatus(err)
	}
	return resp, err
}

// StreamErrorInterceptor is UnaryErrorInterceptor for streaming calls:
// the error a handler returns is mapped once, a panic becomes INTERNAL.
func StreamErrorInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			glog.Errorf("pushdown: panic in %s: %v", info.FullMethod, r)
			err = status.Error(codes.Internal, bounded(fmt.Sprintf("internal error in %s: %v", info.FullMethod, r)))
		}
	}()
	return ToStatus(handler(srv, ss))
}

// ToStatus maps an error to a gRPC status error: a classified error by its
// kind, a status error from a downstream call as is, context errors to
// CANCELLED / DEADLINE_EXCEEDED, anything else to INTERNAL.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	var e *perr.Error
	switch {
	case errors.As(err, &e):
		return status.Error(Code(e.Kind), bounded(err.Error()))
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, bounded(err.Error()))
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, bounded(err.Error()))
	}
	if st, ok := status.FromError(err); ok {
		if len(st.Message()) > MaxErrorMessage {
			return status.Error(st.Code(), bounded(st.Message()))
		}
		return err
	}
	return status.Error(codes.Internal, bounded(err.Error()))
}

// MaxErrorMessage bounds a status message: messages quote client input
// through perr.Quote, and this is the last line of defence against one
// that does not.
const MaxErrorMessage = 2048

func bounded(msg string) string { return perr.Truncate(msg, MaxErrorMessage) }

// Code is the gRPC code of an error kind.
func Code(k perr.Kind) codes.Code {
	switch k {
	case perr.InvalidArgument:
		return codes.InvalidArgument
	case perr.NotFound:
		return codes.NotFound
	case perr.PermissionDenied:
		return codes.PermissionDenied
	case perr.FailedPrecondition:
		return codes.FailedPrecondition
	case perr.ResourceExhausted:
		return codes.ResourceExhausted
	case perr.Unimplemented:
		return codes.Unimplemented
	case perr.Unavailable:
		return codes.Unavailable
	case perr.Corrupt:
		return codes.DataLoss
	case perr.OutOfRange:
		return codes.OutOfRange
	default:
		return codes.Internal
	}
}

// FromStatus classifies the error of a call to another pushdown service so
// it can be passed on with its meaning: a corrupt delete file stays
// "corrupt", an unreachable service becomes "unavailable". The message
// names the service.
func FromStatus(service string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return perr.Wrap(perr.Unavailable, fmt.Errorf("%s: %w", service, err))
	}
	k := perr.Internal
	switch st.Code() {
	case codes.InvalidArgument:
		k = perr.InvalidArgument
	case codes.NotFound:
		k = perr.NotFound
	case codes.PermissionDenied, codes.Unauthenticated:
		k = perr.PermissionDenied
	case codes.FailedPrecondition:
		k = perr.FailedPrecondition
	case codes.ResourceExhausted:
		k = perr.ResourceExhausted
	case codes.Unimplemented:
		// An older volume service without the RPC: the work can run
		// elsewhere, so it counts as unavailable here.
		k = perr.Unavailable
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		k = perr.Unavailable
	case codes.DataLoss:
		k = perr.Corrupt
	case codes.OutOfRange:
		k = perr.OutOfRange
	}
	return perr.New(k, "%s: %s", service, st.Message())
}

// ConnPool caches client connections by address.
type ConnPool struct {
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
	dial  grpc.DialOption
}

// NewConnPool returns a pool dialing with dial.
func NewConnPool(dial grpc.DialOption) *ConnPool {
	return &ConnPool{conns: map[string]*grpc.ClientConn{}, dial: dial}
}

// Get returns a (lazily connecting) client connection to address.
func (p *ConnPool) Get(address string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[address]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(address, p.dial,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes), callCodec),
		experimental.WithBufferPool(messageBuffers))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	p.conns[address] = c
	return c, nil
}

// Drop closes and forgets the connection to address.
func (p *ConnPool) Drop(address string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[address]; ok {
		_ = c.Close()
		delete(p.conns, address)
	}
}

// Close closes every connection.
func (p *ConnPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, c := range p.conns {
		_ = c.Close()
		delete(p.conns, a)
	}
}

// GracefulStop stops s, letting in-flight RPCs finish for up to timeout and
// cancelling the rest.
func GracefulStop(s *grpc.Server, timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		s.Stop()
		<-done
	}
}

// streamWorkers is the gRPC server's stream workers: 4 a core, at least 8.
func streamWorkers() uint32 {
	return uint32(max(8, 4*runtime.GOMAXPROCS(0)))
}
