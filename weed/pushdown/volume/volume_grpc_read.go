package volume

import (
	"context"
	"errors"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// ReadRanges reads byte ranges of one file, preferring local chunks. The
// caller must be allowed to read the file, which must be in a table bucket.
func (s *Service) ReadRanges(ctx context.Context, req *pushdown_pb.ReadRangesRequest) (*pushdown_pb.ReadRangesResponse, error) {
	if req.GetPath() == "" {
		return nil, perr.New(perr.InvalidArgument, "ReadRanges: path is empty")
	}
	if len(req.GetPath()) > access.MaxPathBytes {
		return nil, perr.New(perr.InvalidArgument, "ReadRanges: path of %d bytes exceeds the limit of %d", len(req.GetPath()), access.MaxPathBytes)
	}
	if n := len(req.GetRanges()); n > s.Limits.MaxReadRanges {
		return nil, perr.New(perr.ResourceExhausted, "ReadRanges: %d ranges requested, the limit is %d", n, s.Limits.MaxReadRanges)
	}
	ranges := make([]fileread.Range, len(req.GetRanges()))
	var total int64
	for i, r := range req.GetRanges() {
		if r.GetOffset() < 0 || r.GetLength() < 0 {
			return nil, perr.New(perr.InvalidArgument, "ReadRanges: range %d has negative offset or length (%d, %d)", i, r.GetOffset(), r.GetLength())
		}
		total += r.GetLength()
		if total > s.Limits.MaxReadBytes || total < 0 {
			return nil, perr.New(perr.ResourceExhausted, "ReadRanges: more than %d bytes requested in one call", s.Limits.MaxReadBytes)
		}
		ranges[i] = fileread.Range{Offset: r.GetOffset(), Length: r.GetLength()}
	}
	caller, err := s.callerOf(ctx, "ReadRanges")
	if err != nil {
		return nil, err
	}
	loc, err := caller.MayRead(ctx, req.GetPath())
	if err != nil {
		return nil, err
	}
	f, err := s.Reader.Open(ctx, loc.FilerPath)
	if err != nil {
		return nil, classifyOpen(err)
	}
	if req.GetExpectedSize() > 0 && req.GetExpectedSize() != f.Size {
		return nil, perr.New(perr.FailedPrecondition, "%s has %d bytes, the request expected %d: the file changed", f.Path, f.Size, req.GetExpectedSize())
	}
	data, err := f.ReadRanges(ctx, ranges)
	if err != nil {
		return nil, classifyOpen(err)
	}
	st := f.Stats()
	return &pushdown_pb.ReadRangesResponse{Data: data, FileSize: f.Size, BytesLocal: st.BytesLocal, BytesRemote: st.BytesRemote}, nil
}

func classifyOpen(err error) error {
	switch {
	case perr.IsContext(err):
		return err
	case errors.Is(err, fileread.ErrNotFound):
		return perr.Wrap(perr.NotFound, err)
	case errors.Is(err, fileread.ErrUnsupportedChunk):
		return perr.Wrap(perr.FailedPrecondition, err)
	case errors.Is(err, fileread.ErrOutOfRange):
		return perr.Wrap(perr.OutOfRange, err)
	case errors.Is(err, fileread.ErrBadLocation):
		return perr.Wrap(perr.InvalidArgument, err)
	}
	return perr.Wrap(perr.Unavailable, err)
}
