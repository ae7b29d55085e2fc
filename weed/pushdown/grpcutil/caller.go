package grpcutil

// The caller of every call is established by one interceptor, before its
// handler runs, from the call's metadata and its request (an S3
// signature covers the request's bytes):
//
//	unary:  request ─▶ Admission.Caller(method, request) ── refused ─▶ error, handler never runs
//	                      └─▶ handler(ctx holding the caller)
//	stream: handler's first RecvMsg ─▶ Admission.Caller(method, message) ── refused ─▶ RecvMsg's error
//	                      └─▶ the stream's Context() holds the caller
//
// Handlers read it with CallerOf and refuse a call none was established
// for (a service served without the interceptor serves no one).

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

type callerKey struct{}

// established is a call's caller, as Admission.Caller returned it (nil:
// a caller the service takes without an identity, in-process tests').
type established struct{ caller any }

// CallerOf is the caller established for the call of ctx; ok false: none
// was (the call did not come through the interceptor).
func CallerOf(ctx context.Context) (caller any, ok bool) {
	e, ok := ctx.Value(callerKey{}).(established)
	return e.caller, ok
}

// WithCaller is ctx with caller established (what the interceptor does;
// for callers of a handler in the same process).
func WithCaller(ctx context.Context, caller any) context.Context {
	return context.WithValue(ctx, callerKey{}, established{caller})
}

func (a *Admission) unaryCaller(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := methodName(info.FullMethod)
	msg, ok := req.(proto.Message)
	if !ok {
		return nil, perr.New(perr.Internal, "%s: the request is not a protocol buffer message", method)
	}
	caller, err := a.Caller(ctx, method, msg)
	if err != nil {
		return nil, err
	}
	return handler(WithCaller(ctx, caller), req)
}

func (a *Admission) streamCaller(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &callerStream{ServerStream: ss, ctx: ss.Context(), method: methodName(info.FullMethod), a: a})
}

// callerStream establishes the caller from the stream's first message.
type callerStream struct {
	grpc.ServerStream
	ctx    context.Context
	method string
	a      *Admission
	done   bool
}

func (s *callerStream) Context() context.Context { return s.ctx }

func (s *callerStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.done {
		return nil
	}
	s.done = true
	msg, ok := m.(proto.Message)
	if !ok {
		return perr.New(perr.Internal, "%s: the request is not a protocol buffer message", s.method)
	}
	caller, err := s.a.Caller(s.ServerStream.Context(), s.method, msg)
	if err != nil {
		return err
	}
	s.ctx = WithCaller(s.ctx, caller)
	return nil
}

// callerInterceptors are the interceptors establishing callers, when the
// admission has a Caller.
func (a *Admission) callerInterceptors() (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	if a.Caller == nil {
		pass := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			return handler(ctx, req)
		}
		passStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return handler(srv, ss)
		}
		return pass, passStream
	}
	return a.unaryCaller, a.streamCaller
}

// NoCaller is the error of a handler whose call has no established caller.
func NoCaller(method string) error {
	return perr.New(perr.PermissionDenied, "%s: no caller was established for the call (the service is served without its authentication interceptor and serves no one)", method)
}
