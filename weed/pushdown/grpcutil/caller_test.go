package grpcutil

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// callerStub reports the caller its handlers find in their context.
type callerStub struct {
	volumeStub
	seen []any
}

func (s *callerStub) Status(ctx context.Context, _ *pushdown_pb.StatusRequest) (*pushdown_pb.VolumeStatus, error) {
	c, ok := CallerOf(ctx)
	if !ok {
		return nil, NoCaller("Status")
	}
	s.seen = append(s.seen, c)
	return &pushdown_pb.VolumeStatus{}, nil
}

func (s *callerStub) ScanRows(req *pushdown_pb.ScanRowsRequest, stream grpc.ServerStreamingServer[pushdown_pb.ScanRowsResponse]) error {
	c, ok := CallerOf(stream.Context())
	if !ok {
		return NoCaller("ScanRows")
	}
	s.seen = append(s.seen, c)
	return stream.Send(&pushdown_pb.ScanRowsResponse{})
}

// Every call's caller is established from its method and request before
// its handler runs, unary or streaming; a caller refused never reaches
// the handler; without a Caller the handler finds none and refuses.
func TestEveryCallsCallerIsEstablishedFromItsRequestBeforeItsHandler(t *testing.T) {
	type asked struct {
		method, path string
	}
	var calls []asked
	adm := &Admission{Service: "test", MaxRequest: 1 << 20, MaxInflight: 8 << 20,
		Caller: func(ctx context.Context, method string, req proto.Message) (any, error) {
			path := ""
			if r, ok := req.(*pushdown_pb.ScanRowsRequest); ok {
				path = r.GetPath()
			}
			calls = append(calls, asked{method, path})
			if path == "forbidden" {
				return nil, perr.New(perr.PermissionDenied, "%s: not for you", method)
			}
			return "alice", nil
		}}
	stub := &callerStub{}
	c := serveCaller(t, adm, stub)
	ctx := context.Background()
	if _, err := c.Status(ctx, &pushdown_pb.StatusRequest{}); err != nil {
		t.Fatalf("unary: %v", err)
	}
	scan := func(path string) error {
		stream, err := c.ScanRows(ctx, &pushdown_pb.ScanRowsRequest{Path: path})
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	if err := scan("ok"); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if err := scan("forbidden"); status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != "ScanRows: not for you" {
		t.Fatalf("a refused stream: %v; want PERMISSION_DENIED from the interceptor", err)
	}
	if len(stub.seen) != 2 || stub.seen[0] != "alice" || stub.seen[1] != "alice" {
		t.Fatalf("handlers saw callers %v: want alice twice (the refused call never ran)", stub.seen)
	}
	if len(calls) != 3 || calls[0] != (asked{"Status", ""}) || calls[1] != (asked{"ScanRows", "ok"}) || calls[2] != (asked{"ScanRows", "forbidden"}) {
		t.Fatalf("Caller asked %v: want once a call, with its method and request", calls)
	}

	none := serveCaller(t, &Admission{Service: "test", MaxRequest: 1 << 20}, &callerStub{})
	if _, err := none.Status(ctx, &pushdown_pb.StatusRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("served without a Caller: %v; want PERMISSION_DENIED from the handler", err)
	}
}
