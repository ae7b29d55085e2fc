package volume

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// Limits of ReadRows: files per call, rows per file, position bytes per
// call (the bitmaps), so one call decodes a bounded amount.
const (
	MaxRowFiles         = 256
	MaxRowsPerFile      = 1 << 16
	MaxRowPositionBytes = 16 << 20
)

// ReadRows returns the projected columns of exactly the given rows of each
// file, decoded here: the row groups holding them are decoded once and
// kept decoded in the vector cache (the one the fused projection of a
// vector search uses), so warm reads of the same row groups decode nothing.
//
//	files ─▶ bounds ─▶ caller may read each ─▶ identity re-check
//	      ─▶ row groups of the positions (decoded, cached) ─▶ those rows as Arrow IPC
func (s *Service) ReadRows(ctx context.Context, req *pushdown_pb.ReadRowsRequest) (*pushdown_pb.ReadRowsResponse, error) {
	posBytes := 0
	for _, f := range req.GetFiles() {
		posBytes += len(f.GetPositions())
	}
	switch {
	case len(req.GetFiles()) > MaxRowFiles:
		return nil, perr.New(perr.ResourceExhausted, "ReadRows: %d files exceed the limit of %d per call", len(req.GetFiles()), MaxRowFiles)
	case len(req.GetProjectedFieldIds()) > MaxProjectedFields:
		return nil, perr.New(perr.ResourceExhausted, "ReadRows: %d projected fields exceed %d", len(req.GetProjectedFieldIds()), MaxProjectedFields)
	case len(req.GetProjectedFieldIds()) == 0:
		return nil, perr.New(perr.InvalidArgument, "ReadRows: no projected field ids")
	case posBytes > MaxRowPositionBytes:
		return nil, perr.New(perr.ResourceExhausted, "ReadRows: positions of %d bytes exceed %d", posBytes, MaxRowPositionBytes)
	}
	for i, f := range req.GetFiles() {
		switch {
		case f.GetPath() == "":
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: path is empty", i)
		case len(f.GetPath()) > access.MaxPathBytes:
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: path of %d bytes exceeds the limit of %d", i, len(f.GetPath()), access.MaxPathBytes)
		case f.GetSizeBytes() <= 0 || f.GetRecordCount() < 0:
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: size_bytes %d and record_count %d: want a positive size and a record count ≥ 0", i, f.GetSizeBytes(), f.GetRecordCount())
		}
	}
	caller, err := s.authenticate(ctx, "ReadRows", req)
	if err != nil {
		return nil, err
	}
	for i, f := range req.GetFiles() {
		if _, err := caller.MayRead(ctx, f.GetPath()); err != nil {
			return nil, perr.New(perr.KindOf(err), "ReadRows: files[%d]: %w", i, err)
		}
	}
	_, nm, err := schemaOf(nil, req.GetNameMappingJson())
	if err != nil {
		return nil, err
	}
	resp := &pushdown_pb.ReadRowsResponse{Files: make([]*pushdown_pb.ReadRowsFileResult, len(req.GetFiles()))}
	for i, f := range req.GetFiles() {
		res, err := s.readRowsOf(ctx, f, nm, req.GetProjectedFieldIds())
		if err != nil {
			if perr.IsContext(err) {
				return nil, err
			}
			return nil, perr.New(perr.KindOf(err), "ReadRows: files[%d]: %w", i, err)
		}
		resp.Files[i] = res
	}
	return resp, nil
}

// readRowsOf answers one file of a ReadRows call.
func (s *Service) readRowsOf(ctx context.Context, f *pushdown_pb.ReadRowsFile, nm nameMapping, ids []int32) (*pushdown_pb.ReadRowsFileResult, error) {
	positions, err := rowPositions(f)
	if err != nil {
		return nil, err
	}
	hash, err := s.footers.Identify(ctx, f.GetPath(), f.GetSizeBytes(), f.GetRecordCount())
	if err != nil {
		return nil, err
	}
	identity := footer.IdentityDir(f.GetSizeBytes(), f.GetRecordCount(), hash)
	if want := f.GetIdentity(); want != "" && want != identity {
		return nil, perr.New(perr.FailedPrecondition, "the file's identity is %s, the request names %s: the file changed", identity, perr.Quote(want))
	}
	res := &pushdown_pb.ReadRowsFileResult{Path: f.GetPath(), Rows: int64(len(positions))}
	if len(positions) == 0 {
		return res, nil
	}
	ft, _, err := s.footers.Get(ctx, footer.Identity{Path: f.GetPath(), Size: f.GetSizeBytes()})
	if err != nil {
		return nil, err
	}
	cm := nm.columns(ft)
	if res.ColumnsIpc, res.CacheHit, err = s.projectRows(ctx, f.GetPath(), identity, ft, cm, ids, positions); err != nil {
		return nil, err
	}
	return res, nil
}

// rowPositions decodes a file's positions: at most MaxRowsPerFile, each
// below the file's record count.
func rowPositions(f *pushdown_pb.ReadRowsFile) ([]int64, error) {
	bm, err := rowbits.Decode(f.GetPositions())
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "positions are not a portable roaring64 bitmap: %v", err)
	}
	if n := bm.GetCardinality(); n > MaxRowsPerFile {
		return nil, perr.New(perr.ResourceExhausted, "%d positions exceed the limit of %d per file", n, MaxRowsPerFile)
	}
	if !bm.IsEmpty() && bm.Maximum() >= uint64(max(0, f.GetRecordCount())) {
		return nil, perr.New(perr.InvalidArgument, "position %d is past the file's %d rows", bm.Maximum(), f.GetRecordCount())
	}
	out := make([]int64, 0, bm.GetCardinality())
	it := bm.Iterator()
	for it.HasNext() {
		out = append(out, int64(it.Next()))
	}
	return out, nil
}
