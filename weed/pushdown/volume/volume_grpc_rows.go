package volume

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
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
	seen := make(map[string]int, len(req.GetFiles()))
	for i, f := range req.GetFiles() {
		if j, dup := seen[f.GetPath()]; dup {
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d] repeats files[%d]: name each file once, with all its positions", i, j)
		}
		seen[f.GetPath()] = i
		switch {
		case f.GetPath() == "":
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: path is empty", i)
		case len(f.GetPath()) > access.MaxPathBytes:
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: path of %d bytes exceeds the limit of %d", i, len(f.GetPath()), access.MaxPathBytes)
		case f.GetSizeBytes() <= 0 || f.GetRecordCount() < 0:
			return nil, perr.New(perr.InvalidArgument, "ReadRows: files[%d]: size_bytes %d and record_count %d: want a positive size and a record count ≥ 0", i, f.GetSizeBytes(), f.GetRecordCount())
		}
	}
	caller, err := s.callerOf(ctx, "ReadRows")
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
	// every file is checked and estimated before any is decoded
	budget := s.answerBudget("ReadRows")
	reads := make([]rowsRead, len(req.GetFiles()))
	fail := func(i int, err error) error {
		if perr.IsContext(err) || perr.KindOf(err) == perr.ResourceExhausted {
			return err
		}
		return perr.New(perr.KindOf(err), "ReadRows: files[%d]: %w", i, err)
	}
	for i, f := range req.GetFiles() {
		if err := s.prepareRows(ctx, f, nm, req.GetProjectedFieldIds(), budget, &reads[i]); err != nil {
			return nil, fail(i, err)
		}
	}
	resp := &pushdown_pb.ReadRowsResponse{Files: make([]*pushdown_pb.ReadRowsFileResult, len(req.GetFiles()))}
	for i := range reads {
		res, err := s.answerRows(ctx, &reads[i], req.GetProjectedFieldIds())
		if err != nil {
			return nil, fail(i, err)
		}
		resp.Files[i] = res
		if err := budget.spend(int64(len(res.ColumnsIpc))); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// answerBudget counts the bytes of one call's answer against
// Limits.MaxAnswerBytes: estimates before decoding, actual bytes after.
type answerBudget struct {
	method       string
	limit, spent int64
	estimated    int64
}

func (s *Service) answerBudget(method string) *answerBudget {
	limit := s.Limits.MaxAnswerBytes
	if limit <= 0 {
		limit = DefaultLimits.MaxAnswerBytes
	}
	return &answerBudget{method: method, limit: limit}
}

func (b *answerBudget) exhausted(what string, n int64) error {
	return perr.New(perr.ResourceExhausted, "%s: the answer would hold %s%d MiB of decoded rows, over the limit of %d MiB per call (-pushdown.volume.maxAnswerMB): ask for fewer rows or columns per call",
		b.method, what, (n+(1<<20)-1)>>20, b.limit>>20)
}

// estimate adds a footer-based estimate of a file's answer, refusing the
// call when the estimates alone pass the limit.
func (b *answerBudget) estimate(n int64) error {
	b.estimated += n
	if b.estimated > b.limit {
		return b.exhausted("an estimated ", b.estimated)
	}
	return nil
}

// spend counts bytes of the answer built.
func (b *answerBudget) spend(n int64) error {
	b.spent += n
	if b.spent > b.limit {
		return b.exhausted("at least ", b.spent)
	}
	return nil
}

// estimateRows is the decoded size of rows of a file's projected columns:
// per row group holding some, its rows times the uncompressed bytes a row
// of those column chunks takes (a floor for dictionary-encoded columns,
// which the count of actual bytes then catches).
func estimateRows(ft *footer.Footer, cols []int, positions []int64) int64 {
	var total int64
	first, rg := int64(0), 0
	for i := 0; i < len(positions); {
		for rg < ft.Meta.NumRowGroups() && positions[i] >= first+ft.Meta.RowGroup(rg).NumRows() {
			first += ft.Meta.RowGroup(rg).NumRows()
			rg++
		}
		if rg == ft.Meta.NumRowGroups() {
			break
		}
		g := ft.Meta.RowGroup(rg)
		end := first + g.NumRows()
		n := int64(0)
		for ; i < len(positions) && positions[i] < end; i++ {
			n++
		}
		var rowBytes float64
		for _, c := range cols {
			if c < 0 || c >= g.NumColumns() || g.NumRows() <= 0 {
				continue
			}
			if cc, err := g.ColumnChunk(c); err == nil {
				rowBytes += float64(cc.TotalUncompressedSize()) / float64(g.NumRows())
			}
		}
		total += int64(rowBytes * float64(n))
	}
	return total
}

// rowsRead is one file of a ReadRows call, checked and estimated.
type rowsRead struct {
	f         *pushdown_pb.ReadRowsFile
	positions []int64
	identity  string
	ft        *footer.Footer
	cm        *plan.ColumnMap
}

// prepareRows checks one file of a ReadRows call (positions, identity) and
// adds the estimate of its answer to the budget.
func (s *Service) prepareRows(ctx context.Context, f *pushdown_pb.ReadRowsFile, nm nameMapping, ids []int32, budget *answerBudget, r *rowsRead) error {
	var err error
	r.f = f
	if r.positions, err = rowPositions(f); err != nil {
		return err
	}
	hash, err := s.footers.Identify(ctx, f.GetPath(), f.GetSizeBytes(), f.GetRecordCount())
	if err != nil {
		return err
	}
	r.identity = footer.IdentityDir(f.GetSizeBytes(), f.GetRecordCount(), hash)
	if want := f.GetIdentity(); want != "" && want != r.identity {
		return perr.New(perr.FailedPrecondition, "the file's identity is %s, the request names %s: the file changed", r.identity, perr.Quote(want))
	}
	if len(r.positions) == 0 {
		return nil
	}
	if r.ft, _, err = s.footers.Get(ctx, footer.Identity{Path: f.GetPath(), Size: f.GetSizeBytes()}); err != nil {
		return err
	}
	r.cm = nm.columns(r.ft)
	return budget.estimate(estimateRows(r.ft, r.cm.Projection(r.ft.Meta, fieldIDs(ids)), r.positions))
}

func fieldIDs(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// answerRows decodes one prepared file's rows.
func (s *Service) answerRows(ctx context.Context, r *rowsRead, ids []int32) (*pushdown_pb.ReadRowsFileResult, error) {
	res := &pushdown_pb.ReadRowsFileResult{Path: r.f.GetPath(), Rows: int64(len(r.positions))}
	if len(r.positions) == 0 {
		return res, nil
	}
	var err error
	if res.ColumnsIpc, res.CacheHit, err = s.projectRows(ctx, r.f.GetPath(), r.identity, r.ft, r.cm, ids, r.positions, nil); err != nil {
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
