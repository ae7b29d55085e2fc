package grpcutil

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
)

// UnaryMetricsInterceptor counts every call by service, method and the
// gRPC code it ended with, and records its latency. It runs outside
// UnaryErrorInterceptor, so it sees the code the client receives.
func UnaryMetricsInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	metrics.ObserveRPC(info.FullMethod, status.Code(err), time.Since(start))
	return resp, err
}

// StreamMetricsInterceptor records a streaming call as
// UnaryMetricsInterceptor records a unary one (its whole duration).
func StreamMetricsInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	metrics.ObserveRPC(info.FullMethod, status.Code(err), time.Since(start))
	return err
}
