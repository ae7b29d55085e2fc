package volume

import (
	"bytes"
	"context"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// Limits of ScanRows: row groups and row ranges per call, bytes of
// deleted positions per call, and the rows and bytes of one answer
// message (a batch).
const (
	MaxScanRowGroups     = 1 << 16
	MaxScanRowRanges     = 1 << 20
	MaxScanDeletedBytes  = 64 << 20
	scanBatchRows        = 1 << 16
	scanBatchTargetBytes = 4 << 20
)

// ScanRows evaluates the request's predicate on the planned rows of the
// given row groups of one file, next to the data, and streams the
// projected columns of the matching rows, row group by row group, in
// batches of bounded size:
//
//	bounds ─▶ caller may read the file ─▶ predicate bound (exactly
//	evaluable, top-level columns) ─▶ identity re-check ─▶ per row group:
//	   planned rows − deleted positions ─▶ decode the predicate's columns,
//	   colfilter (= predicate.Eval, IEEE) == TRUE ─▶ matching rows ─▶ batches of at
//	   most 65,536 rows / ~4 MiB estimated ─▶ projected columns (decoded
//	   once for the row group's batches, a column the predicate decoded
//	   taken from it, not decoded again; from the shared cache when
//	   ReadRows or a vector search put it there, never added to it: a
//	   scan's row groups would push out what warm queries use)
//	   ─▶ Arrow IPC message ─▶ stream.Send
//	─▶ stops at limit matching rows, or when the caller goes away
//
// The file is opened once a call (not once a row group).
//
// Memory: one row group's predicate columns and projected columns
// decoded at a time (none kept after it), one batch encoded at a time; gRPC's flow control
// holds the sender while the caller does not read. Each message is
// counted against -pushdown.volume.maxAnswerMB.
func (s *Service) ScanRows(req *pushdown_pb.ScanRowsRequest, stream grpc.ServerStreamingServer[pushdown_pb.ScanRowsResponse]) error {
	ctx := stream.Context()
	if err := checkScanRequest(req); err != nil {
		return err
	}
	caller, err := s.callerOf(ctx, "ScanRows")
	if err != nil {
		return err
	}
	if _, err := caller.MayRead(ctx, req.GetPath()); err != nil {
		return perr.New(perr.KindOf(err), "ScanRows: %w", err)
	}
	schema, nm, err := schemaOf(req.GetSchemaJson(), req.GetNameMappingJson())
	if err != nil {
		return err
	}
	if schema == nil {
		return perr.New(perr.InvalidArgument, "ScanRows: schema_json is empty: the predicate's field ids need the table schema")
	}
	vf, err := bindRowFilter("ScanRows", req.GetPredicateKind(), req.GetPredicate(), schema, req.GetSchemaJson())
	if err != nil {
		return err
	}
	fail := func(err error) error {
		if perr.IsContext(err) || perr.KindOf(err) == perr.ResourceExhausted {
			return err
		}
		return perr.New(perr.KindOf(err), "ScanRows: %w", err)
	}
	hash, err := s.footers.Identify(ctx, req.GetPath(), req.GetSizeBytes(), req.GetRecordCount())
	if err != nil {
		return fail(err)
	}
	identity := footer.IdentityDir(req.GetSizeBytes(), req.GetRecordCount(), hash)
	if want := req.GetIdentity(); want != "" && want != identity {
		return fail(perr.New(perr.FailedPrecondition, "the file's identity is %s, the request names %s: the file changed", identity, perr.Quote(want)))
	}
	ft, _, err := s.footers.Get(ctx, footer.Identity{Path: req.GetPath(), Size: req.GetSizeBytes()})
	if err != nil {
		return fail(err)
	}
	cm := nm.columns(ft)
	if !cm.Mapped {
		return fail(perr.New(perr.FailedPrecondition, "the file's columns carry no field ids and no name mapping maps them, so the predicate cannot be evaluated on it"))
	}
	for _, id := range vf.ids {
		if len(cm.Leaves(id)) == 0 {
			// what the column reads as (NULL, an initial-default, an
			// identity-partition value) is the reader's to decide
			name, _ := schema.FindColumnName(id)
			return fail(perr.New(perr.FailedPrecondition, "the predicate's column %s is absent from the file; the volume evaluates predicates on stored columns only", perr.Quote(name)))
		}
	}
	ids := req.GetProjectedFieldIds()
	cols := cm.Projection(ft.Meta, fieldIDs(ids))
	firsts := make([]int64, ft.Meta.NumRowGroups()+1)
	for rg := range ft.Meta.NumRowGroups() {
		firsts[rg+1] = firsts[rg] + ft.Meta.RowGroup(rg).NumRows()
	}
	leaves, types, err := rowFilterColumns(vf, schema, cm)
	if err != nil {
		return fail(err)
	}
	var sf *scanFile // opened once, on the first row group with a candidate
	budget := s.answerBudget("ScanRows")
	batches := &batchStream{continuation: req.GetIpcContinuation()}
	sent := int64(0)
	for _, g := range req.GetRowGroups() {
		rg := int(g.GetRowGroup())
		if rg >= ft.Meta.NumRowGroups() {
			return fail(perr.New(perr.InvalidArgument, "row group %d: the file has %d", rg, ft.Meta.NumRowGroups()))
		}
		n := firsts[rg+1] - firsts[rg]
		mask, err := scanCandidates(g, firsts[rg], n)
		if err != nil {
			return fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
		}
		evaluated := int64(mask.GetCardinality())
		matched := roaring64.New()
		memo := map[int]*decodedRowGroup{} // this row group decoded once for its batches, not cached
		var aligned *decodedRowGroup       // or its matching rows' projected columns, aligned with them
		if evaluated > 0 {
			if sf == nil {
				fr, src, err := s.openArrowReader(ctx, req.GetPath(), ft)
				if err != nil {
					return fail(err)
				}
				sf = newScanFile(fr, src, ft)
			}
			rf := *vf
			if req.GetLimit() > 0 {
				rf.stopAfter = req.GetLimit() - sent // a LIMIT stops the evaluation early
			}
			// the projection is decoded with the predicate unless the
			// shared cache holds it (ReadRows or a vector search put it there)
			cached := s.vectorCache().Holds(projectedKey(req.GetPath(), identity, rg, cols))
			if aligned, err = scanRowGroup(ctx, sf, cm, rg, firsts[rg], n, leaves, types, &rf, mask, cols, len(ids) > 0 && !cached, matched, memo); err != nil {
				return fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
			}
		}
		positions := make([]int64, 0, matched.GetCardinality())
		it := matched.Iterator()
		for it.HasNext() && (req.GetLimit() == 0 || sent+int64(len(positions)) < req.GetLimit()) {
			positions = append(positions, int64(it.Next()))
		}
		batch := scanBatchRows
		if len(positions) > 0 && len(ids) > 0 {
			if est := estimateRows(ft, cols, positions[:1]); est > 0 {
				batch = int(min(int64(scanBatchRows), max(1, scanBatchTargetBytes/est)))
			}
		}
		for start := 0; start == 0 || start < len(positions); start += batch {
			part := positions[start:min(start+batch, len(positions))]
			msg := &pushdown_pb.ScanRowsResponse{RowGroup: int32(rg), RowCount: int64(len(part))}
			local := roaring64.New()
			for _, p := range part {
				local.Add(uint64(p - firsts[rg]))
			}
			if msg.Rows, err = local.ToBytes(); err != nil {
				return err
			}
			if len(part) > 0 && len(ids) > 0 {
				var rec arrow.RecordBatch
				if aligned != nil {
					rec = alignedRecord(aligned, start, start+len(part))
				} else {
					rec, _, err = s.projectRecord(ctx, req.GetPath(), identity, ft, cm, ids, part, memo)
				}
				if err == nil {
					msg.ColumnsIpc, msg.ColumnsIpcContinues, err = batches.encode(rec)
					rec.Release()
				}
				if err != nil {
					return fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
				}
				if n := int64(len(msg.ColumnsIpc)); n > budget.limit {
					return budget.exhausted("in one batch ", n)
				}
			}
			if start+batch >= len(positions) {
				msg.RowGroupDone, msg.RowsEvaluated = true, evaluated
			}
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
		sent += int64(len(positions))
		if req.GetLimit() > 0 && sent >= req.GetLimit() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// scanRowGroup evaluates the predicate on the candidates (file positions,
// all in row group rg of n rows from file position first) and adds the
// matching positions to matched. When project is set and a row matched,
// it also decodes the projected columns (leaves cols): few candidates
// (scanSparse) or few matches give them at the matching rows only,
// aligned with them (aligned); otherwise the row group's columns go into
// memo[rg] for the batches, each column the predicate's decoding already holds whole
// (`message` of a LIKE, say) taken from it rather than decoded twice.
func scanRowGroup(ctx context.Context, sf *scanFile, cm *plan.ColumnMap, rg int, first, n int64,
	leaves []int, types map[int]iceberg.Type, vf *vectorFilter, mask *roaring64.Bitmap, cols []int, project bool,
	matched *roaring64.Bitmap, memo map[int]*decodedRowGroup) (aligned *decodedRowGroup, err error) {
	var pred arrow.Table
	var keep []arrow.Array // arrays made from pred for the projection
	defer func() {
		for _, a := range keep {
			a.Release()
		}
		if pred != nil {
			pred.Release()
		}
		if p := recover(); p != nil {
			aligned, err = nil, perr.New(perr.Corrupt, "decode: %v", p)
		}
	}()
	rows, any := candidateRows(mask, first, n)
	if !any {
		return nil, nil
	}
	if rows != nil && int64(len(rows))*sparseShare <= n {
		var ok bool
		if aligned, ok, err = scanSparse(ctx, sf, cm, rg, first, leaves, types, vf, rows, cols, project, matched); ok || err != nil {
			return aligned, err
		}
	}
	if err := evaluateRowGroup(ctx, sf.predicateReader(rg, leaves), sf.ft, cm, rg, n, first, leaves, vf, types, rows, matched, &pred); err != nil {
		return nil, err
	}
	if !project || matched.IsEmpty() || len(cols) == 0 {
		return nil, nil
	}
	if hits := int64(matched.GetCardinality()); hits*sparseShare <= n {
		// few matches: the projection at them only
		at := make([]int64, 0, hits)
		it := matched.Iterator()
		for it.HasNext() {
			at = append(at, int64(it.Next())-first)
		}
		_, held := rootsOf(sf.ft.Meta.Schema, leaves)
		return projectSparse(ctx, sf, rg, cols, at, func(name string, ls []int) (arrow.Array, []int64) {
			idx := pred.Schema().FieldIndices(name)
			if !slices.Equal(held[name], ls) || len(idx) == 0 || pred.Column(idx[0]).Len() != int(n) {
				return nil, nil
			}
			whole, err := oneChunk(pred.Column(idx[0]).Data().Chunks())
			if err != nil {
				return nil, nil
			}
			keep = append(keep, whole)
			return whole, at
		})
	}
	g, err := decodeProjection(ctx, sf.fr, sf.ft, rg, cols, leaves, pred)
	if err != nil {
		return nil, err
	}
	memo[rg] = g
	return nil, nil
}

// alignedRecord is rows [from, to) of g (columns aligned with a row
// group's matching rows) as a record batch (the caller releases it).
func alignedRecord(g *decodedRowGroup, from, to int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(g.cols))
	for c, a := range g.cols {
		arrs[c] = array.NewSlice(a, int64(from), int64(to))
		defer arrs[c].Release()
	}
	return array.NewRecordBatch(g.schema, arrs, int64(to-from))
}

// batchStream encodes a ScanRows call's batches of columns. Without
// continuation each batch is an Arrow IPC stream of its own; with it the
// batches are pieces of one stream: the first (and any whose columns are
// typed otherwise than the stream's schema) starts with the schema, each
// other is one record batch message, and no end-of-stream marker is sent
// (the call's end is the stream's).
type batchStream struct {
	continuation bool
	buf          bytes.Buffer
	w            *ipc.Writer
	schema       *arrow.Schema
}

// encode is rec's bytes and whether they continue the previous batch's
// stream.
func (b *batchStream) encode(rec arrow.RecordBatch) ([]byte, bool, error) {
	if !b.continuation {
		out, err := recordIPC(rec)
		return out, false, err
	}
	continues := b.w != nil
	if continues && !rec.Schema().Equal(b.schema) {
		if sameColumnTypes(rec.Schema(), b.schema) {
			// the same columns, other metadata: typed as the stream is
			rec = array.NewRecordBatch(b.schema, rec.Columns(), rec.NumRows())
			defer rec.Release()
		} else {
			continues = false
		}
	}
	if !continues {
		b.buf.Reset()
		b.schema = rec.Schema()
		b.w = ipc.NewWriter(&b.buf, ipc.WithSchema(b.schema))
	}
	if err := b.w.Write(rec); err != nil {
		return nil, false, perr.New(perr.Internal, "%v", err)
	}
	out := bytes.Clone(b.buf.Bytes())
	b.buf.Reset()
	return out, continues, nil
}

// sameColumnTypes says whether a and b have the same fields, by name and
// type, in the same order.
func sameColumnTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Nullable != fb.Nullable || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// decodeProjection decodes row group rg's projected columns (leaves cols,
// ascending), taking each column root pred (the row group's decoded
// predicate columns, leaves predLeaves; nil: none) holds whole from it
// instead of decoding it again. Fields are matched by their root name;
// the schema carries no file metadata (readers match columns by name).
func decodeProjection(ctx context.Context, fr *pqarrow.FileReader, ft *footer.Footer, rg int, cols, predLeaves []int, pred arrow.Table) (*decodedRowGroup, error) {
	roots, want := rootsOf(ft.Meta.Schema, cols)
	_, have := rootsOf(ft.Meta.Schema, predLeaves)
	reuse := map[string]bool{}
	var rest []int
	for _, name := range roots {
		if pred != nil && slices.Equal(want[name], have[name]) && len(pred.Schema().FieldIndices(name)) > 0 {
			reuse[name] = true
		} else {
			rest = append(rest, want[name]...)
		}
	}
	var decoded arrow.Table
	if len(rest) > 0 {
		t, err := fr.ReadRowGroups(ctx, rest, []int{rg})
		if err != nil {
			if perr.IsContext(err) {
				return nil, err
			}
			return nil, perr.Wrap(perr.Unavailable, err)
		}
		defer t.Release()
		decoded = t
	}
	g := &decodedRowGroup{}
	fields := make([]arrow.Field, 0, len(roots))
	for _, name := range roots {
		src := decoded
		if reuse[name] {
			src = pred
		}
		idx := src.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil, perr.New(perr.Corrupt, "row group %d: column %s was not decoded", rg, perr.Quote(name))
		}
		a, err := oneChunk(src.Column(idx[0]).Data().Chunks())
		if err != nil {
			return nil, err
		}
		f := src.Schema().Field(idx[0])
		if d, isDict := f.Type.(*arrow.DictionaryType); isDict {
			// the predicate's dictionary (predReader): its values
			if a, err = plainOf(ctx, a, d.ValueType); err != nil {
				return nil, err
			}
			f.Type = d.ValueType
		}
		fields = append(fields, f)
		g.cols = append(g.cols, a)
	}
	g.schema = arrow.NewSchema(fields, nil)
	return g, nil
}

// checkScanRequest bounds a ScanRows request before anything is looked up.
func checkScanRequest(req *pushdown_pb.ScanRowsRequest) error {
	if err := checkFileRowGroups("ScanRows", req.GetPath(), req.GetSizeBytes(), req.GetRecordCount(), req.GetRowGroups()); err != nil {
		return err
	}
	switch {
	case len(req.GetProjectedFieldIds()) > MaxProjectedFields:
		return perr.New(perr.ResourceExhausted, "ScanRows: %d projected fields exceed %d", len(req.GetProjectedFieldIds()), MaxProjectedFields)
	case len(req.GetPredicate()) == 0:
		return perr.New(perr.InvalidArgument, "ScanRows: no predicate: read the rows with ReadRanges")
	case req.GetLimit() < 0:
		return perr.New(perr.InvalidArgument, "ScanRows: limit %d is negative", req.GetLimit())
	}
	return nil
}

// checkFileRowGroups bounds what ScanRows and AggregateRows share: one
// file (path, size, record count) and its planned row groups (how many,
// their row ranges and deleted positions, ascending and each once).
func checkFileRowGroups(method, path string, size, records int64, groups []*pushdown_pb.ScanRowGroup) error {
	ranges, deleted := 0, 0
	for _, g := range groups {
		ranges += len(g.GetRowRanges())
		deleted += len(g.GetDeletedPositions())
	}
	switch {
	case path == "":
		return perr.New(perr.InvalidArgument, "%s: path is empty", method)
	case len(path) > access.MaxPathBytes:
		return perr.New(perr.InvalidArgument, "%s: path of %d bytes exceeds the limit of %d", method, len(path), access.MaxPathBytes)
	case size <= 0 || records < 0:
		return perr.New(perr.InvalidArgument, "%s: size_bytes %d and record_count %d: want a positive size and a record count ≥ 0", method, size, records)
	case len(groups) == 0:
		return perr.New(perr.InvalidArgument, "%s: no row groups", method)
	case len(groups) > MaxScanRowGroups:
		return perr.New(perr.ResourceExhausted, "%s: %d row groups exceed the limit of %d per call", method, len(groups), MaxScanRowGroups)
	case ranges > MaxScanRowRanges:
		return perr.New(perr.ResourceExhausted, "%s: %d row ranges exceed the limit of %d per call", method, ranges, MaxScanRowRanges)
	case deleted > MaxScanDeletedBytes:
		return perr.New(perr.ResourceExhausted, "%s: deleted positions of %d bytes exceed %d", method, deleted, MaxScanDeletedBytes)
	}
	for i, g := range groups {
		if g.GetRowGroup() < 0 || (i > 0 && g.GetRowGroup() <= groups[i-1].GetRowGroup()) {
			return perr.New(perr.InvalidArgument, "%s: row_groups[%d] is %d: want row groups ascending, each once", method, i, g.GetRowGroup())
		}
	}
	return nil
}

// scanCandidates are the file-absolute positions of a row group's planned
// rows (its row ranges; none: all n) less its deleted positions.
func scanCandidates(g *pushdown_pb.ScanRowGroup, first, n int64) (*roaring64.Bitmap, error) {
	out := roaring64.New()
	if len(g.GetRowRanges()) == 0 {
		out.AddRange(uint64(first), uint64(first+n))
	}
	for i, r := range g.GetRowRanges() {
		if r.GetStart() < 0 || r.GetStart() > r.GetEnd() || r.GetEnd() > n {
			return nil, perr.New(perr.InvalidArgument, "row_ranges[%d] [%d, %d) is not inside the row group's %d rows", i, r.GetStart(), r.GetEnd(), n)
		}
		out.AddRange(uint64(first+r.GetStart()), uint64(first+r.GetEnd()))
	}
	if len(g.GetDeletedPositions()) > 0 {
		del, err := rowbits.Decode(g.GetDeletedPositions())
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "deleted_positions are not a portable roaring64 bitmap: %v", err)
		}
		out.AndNot(del)
	}
	return out, nil
}
