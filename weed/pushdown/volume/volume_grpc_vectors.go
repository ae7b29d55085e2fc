package volume

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// Limits of SearchVectors.
const (
	MaxVectorFiles     = 1024
	MaxProjectedFields = 1024
	MaxCandidateBytes  = 64 << 20 // all masks of one call
)

// DefaultVectorCacheBytes bounds the files' vectors kept in memory
// (-pushdown.vectorCacheMB).
const DefaultVectorCacheBytes = 1 << 30

// SetVectorCacheBytes sizes the cache of files' vectors (call before
// serving).
func (s *Service) SetVectorCacheBytes(n int64) {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	s.vectors = indexing.NewIndexCache(n)
	s.vectors.Tracker = s.Tracker
}

func (s *Service) vectorCache() *indexing.IndexCache {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	if s.vectors == nil {
		s.vectors = indexing.NewIndexCache(DefaultVectorCacheBytes)
		s.vectors.Tracker = s.Tracker
	}
	return s.vectors
}

// cachedValue carries a file's vectors or a predicate's answer in an
// IndexCache (it answers no leaf).
type cachedValue struct {
	v any
	n int64
}

func (c cachedValue) Eval(context.Context, *predicate.Leaf) (sideindex.Answer, error) {
	return sideindex.Answer{Unknown: true}, nil
}
func (c cachedValue) Bytes() int64 { return c.n }

// SearchVectors answers the top-K of a batch of data files: per file the
// committed IVF index when it opens and matches the file's identity (else
// an exact scan, and index_state says why), restricted to the file's
// candidate mask; the local top-K over the batch comes back with the
// projected columns of exactly those rows.
//
//	files ─▶ identity re-check ─▶ vectors (cache, else read the column once)
//	      ─▶ index (IndexCache, else payload) ─▶ masked search ─▶ merge top-K
//	      ─▶ projected columns of the winners (their row groups only) as Arrow IPC
func (s *Service) SearchVectors(ctx context.Context, req *pushdown_pb.SearchVectorsRequest) (*pushdown_pb.SearchVectorsResponse, error) {
	maskBytes := 0
	for _, f := range req.GetFiles() {
		maskBytes += len(f.GetCandidates())
	}
	switch {
	case len(req.GetFiles()) > MaxVectorFiles:
		return nil, perr.New(perr.ResourceExhausted, "SearchVectors: %d files exceed the limit of %d per call", len(req.GetFiles()), MaxVectorFiles)
	case len(req.GetVector()) > sideindex.MaxVectorDim:
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: a query vector of %d dimensions exceeds %d", len(req.GetVector()), sideindex.MaxVectorDim)
	case len(req.GetProjectedFieldIds()) > MaxProjectedFields:
		return nil, perr.New(perr.ResourceExhausted, "SearchVectors: %d projected fields exceed %d", len(req.GetProjectedFieldIds()), MaxProjectedFields)
	case maskBytes > MaxCandidateBytes:
		return nil, perr.New(perr.ResourceExhausted, "SearchVectors: candidate masks of %d bytes exceed %d", maskBytes, MaxCandidateBytes)
	case req.GetTopK() <= 0 || req.GetTopK() > vector.MaxK:
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: top_k %d: want 1 to %d", req.GetTopK(), vector.MaxK)
	case len(req.GetVector()) == 0:
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: the query vector is empty")
	case len(req.GetPredicate()) > MaxPredicateSize:
		return nil, perr.New(perr.ResourceExhausted, "SearchVectors: predicate of %d bytes exceeds %d", len(req.GetPredicate()), MaxPredicateSize)
	case req.GetNprobe() < 0 || req.GetRefine() < 0 || req.GetRefine() > 1000:
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: nprobe %d and refine %d: want nprobe ≥ 0 and refine in [0, 1000]", req.GetNprobe(), req.GetRefine())
	}
	caller, err := s.callerOf(ctx, "SearchVectors")
	if err != nil {
		return nil, err
	}
	for i, f := range req.GetFiles() {
		if _, err := caller.MayRead(ctx, f.GetPath()); err != nil {
			return nil, perr.New(perr.KindOf(err), "SearchVectors: files[%d]: %w", i, err)
		}
	}
	schema, nm, err := schemaOf(req.GetSchemaJson(), req.GetNameMappingJson())
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: schema_json is required")
	}
	field, ok := schema.FindFieldByID(int(req.GetFieldId()))
	if !ok {
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: field id %d is not in the schema", req.GetFieldId())
	}
	if !sideindex.IsVectorType(field.Type) {
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: column %s is %s, not a vector (a list of float or double)", perr.Quote(field.Name), field.Type)
	}
	vf, err := newVectorFilter(req, schema)
	if err != nil {
		return nil, err
	}
	q := vector.Query{Vector: req.GetVector(), K: int(req.GetTopK()), NProbe: int(req.GetNprobe()), Refine: int(req.GetRefine()),
		Metric: vector.Metric(req.GetMetric())}
	outs := make([]*fileSearch, len(req.GetFiles()))
	g, gctx := safe.Group(ctx, "volume")
	g.SetLimit(max(1, cap(s.buildSlots)))
	for i, f := range req.GetFiles() {
		g.Go(func() error {
			o, err := s.prepareFile(gctx, f, schema, nm, field, vf, q)
			if err != nil {
				if perr.IsContext(err) {
					return err
				}
				return perr.New(perr.KindOf(err), "SearchVectors: %s: %w", f.GetPath(), err)
			}
			// the centroid distances (for the bound and the search) and the
			// lower bound of the file's distances, on the file's worker
			o.lower = math.Inf(-1)
			if o.ix != nil && o.ix.NList() > 0 {
				o.q.Centroids = o.ix.CentroidDistances(o.q)
				o.lower = o.ix.LowerBound(o.pk, o.q)
			}
			outs[i] = o
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The files are searched nearest first (by the lower bound of their
	// distance to the query) with a Bound shared by all: a file or list
	// whose rows are all farther than the k-th nearest found so far is
	// skipped — the batch's top-K is unchanged.
	bound := vector.NewBound(q.K)
	order := make([]int, len(outs))
	for i := range outs {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(outs[a].lower, outs[b].lower) })
	g, gctx = safe.Group(ctx, "volume")
	g.SetLimit(max(1, cap(s.buildSlots)))
	for _, i := range order {
		g.Go(func() error {
			o := outs[i]
			if err := gctx.Err(); err != nil {
				return err
			}
			if err := o.search(bound); err != nil {
				return perr.New(perr.KindOf(err), "SearchVectors: %s: %w", o.result.GetPath(), err)
			}
			bound.Add(o.hits)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	type ranked struct {
		file int
		hit  vector.Hit
	}
	var all []ranked
	for i, o := range outs {
		for _, h := range o.hits {
			all = append(all, ranked{i, h})
		}
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.hit.Dist, b.hit.Dist), cmp.Compare(a.file, b.file), cmp.Compare(a.hit.Pos, b.hit.Pos))
	})
	all = all[:min(len(all), q.K)]
	resp := &pushdown_pb.SearchVectorsResponse{}
	perFile := make([][]int64, len(outs))
	for _, r := range all {
		o := outs[r.file]
		resp.RowRefs = append(resp.RowRefs, &pushdown_pb.ScoredRowRef{HasScore: true, Score: r.hit.Dist,
			Ref: &pushdown_pb.RowRef{File: o.result.Path, RowGroup: int32(rowGroupOf(o.ft, r.hit.Pos)), FilePosition: r.hit.Pos}})
		perFile[r.file] = append(perFile[r.file], r.hit.Pos)
	}
	budget := s.answerBudget("SearchVectors")
	for i, o := range outs {
		resp.Files = append(resp.Files, o.result)
		if len(perFile[i]) == 0 || len(req.GetProjectedFieldIds()) == 0 {
			continue
		}
		if err := budget.estimate(estimateRows(o.ft, o.cm.Projection(o.ft.Meta, fieldIDs(req.GetProjectedFieldIds())), perFile[i])); err != nil {
			return nil, err
		}
		ipcBytes, _, err := s.projectRows(ctx, o.result.Path, o.identity, o.ft, o.cm, req.GetProjectedFieldIds(), perFile[i], nil)
		if err != nil {
			if perr.IsContext(err) {
				return nil, err
			}
			return nil, perr.New(perr.KindOf(err), "SearchVectors: projecting %s: %w", o.result.Path, err)
		}
		o.result.ColumnsIpc = ipcBytes
		if err := budget.spend(int64(len(ipcBytes))); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// fileSearch is one file of a SearchVectors call: what its search needs
// (prepareFile) and, once searched, its hits.
type fileSearch struct {
	result   *pushdown_pb.VectorFileResult
	ft       *footer.Footer
	cm       *plan.ColumnMap
	identity string
	kind     string       // the index kind requested
	q        vector.Query // with the file's mask
	mat      *vector.Matrix
	ix       *vector.Index  // nil: searched exactly
	pk       *vector.Packed // ivf's packed lists, ivf_pq's list radii (nil: none)
	lower    float64        // lower bound of its rows' distances (-Inf: none known)
	done     bool           // nothing to search (an empty mask)
	hits     []vector.Hit
}

// prepareFile resolves one file of a search: its identity, footer,
// column, mask (the candidates, the predicate evaluated here), vectors and
// index; a file with an empty mask is already done.
func (s *Service) prepareFile(ctx context.Context, f *pushdown_pb.VectorSearchFile, schema *iceberg.Schema, nm nameMapping,
	field iceberg.NestedField, vf *vectorFilter, q vector.Query) (*fileSearch, error) {
	res := &pushdown_pb.VectorFileResult{Path: f.GetPath()}
	hash, err := s.footers.Identify(ctx, f.GetPath(), f.GetSizeBytes(), f.GetRecordCount())
	if err != nil {
		return nil, err
	}
	ft, _, err := s.footers.Get(ctx, footer.Identity{Path: f.GetPath(), Size: f.GetSizeBytes()})
	if err != nil {
		return nil, err
	}
	identity := identityOf(&pushdown_pb.DataFileDescriptor{SizeBytes: f.GetSizeBytes(), RecordCount: f.GetRecordCount()}, hash)
	cm := nm.columns(ft)
	leaves := cm.Leaves(field.ID)
	if len(leaves) != 1 {
		return nil, perr.New(perr.FailedPrecondition, "the file stores %d leaf columns for vector field %d (%s), not one", len(leaves), field.ID, perr.Quote(field.Name))
	}
	o := &fileSearch{result: res, ft: ft, cm: cm, identity: identity, kind: f.GetIndexKind()}
	if q.Mask, err = candidates(f); err != nil {
		return nil, err
	}
	if f.GetFilter() {
		if q.Mask, res.FilterCacheHit, err = s.filterMask(ctx, f, identity, ft, cm, schema, vf, q.Mask); err != nil {
			return nil, err
		}
	}
	o.q = q
	res.MaskRows = -1
	if q.Mask != nil {
		res.MaskRows = int64(q.Mask.GetCardinality())
		if q.Mask.IsEmpty() { // nothing to search: the vectors are not read
			res.SearchedBy, o.done = "exact", true
			return o, nil
		}
	}
	mat, hit, err := s.fileVectors(ctx, f.GetPath(), identity, ft, leaves[0], field.ID)
	if err != nil {
		return nil, err
	}
	o.mat, res.CacheHit = mat, hit
	if len(q.Vector) != mat.Dim {
		return nil, perr.New(perr.InvalidArgument, "dimension mismatch: the query vector has %d dimensions, column %s of this file holds vectors of %d", len(q.Vector), perr.Quote(field.Name), mat.Dim)
	}
	if kind := f.GetIndexKind(); kind != "" {
		probe := &pushdown_pb.IndexProbe{DataFile: f.GetPath(), SizeBytes: f.GetSizeBytes(), RecordCount: f.GetRecordCount(), Identity: f.GetIndexIdentity(),
			FieldId: int32(field.ID), Kind: kind, Params: f.GetIndexParams(), PayloadBytes: f.GetIndexPayloadBytes(), PayloadSha256: f.GetIndexPayloadSha256()}
		idx, state, err := s.openIndex(ctx, probe, schema)
		vi, isVector := idx.(sideindex.VectorIndex)
		switch {
		case err != nil:
			if perr.IsContext(err) {
				return nil, err
			}
			res.IndexState, res.Reason = state, boundedReason(err)
		case !isVector:
			res.IndexState, res.Reason = indexing.StateFailed, fmt.Sprintf("%s is not a vector index kind", perr.Quote(kind))
		case vi.Vectors().Dim != mat.Dim || vi.Vectors().Rows != mat.Rows():
			// the committed payload does not index these vectors: searched
			// exactly, never with it
			res.IndexState, res.Reason = indexing.StateCorrupt, fmt.Sprintf("the index covers %d rows of %d dimensions, the file holds %d of %d",
				vi.Vectors().Rows, vi.Vectors().Dim, mat.Rows(), mat.Dim)
		default:
			o.ix = vi.Vectors()
			if o.ix.NList() > 0 {
				o.pk = s.packedLists(f, identity, field.ID, o.ix, mat)
			}
		}
	}
	return o, nil
}

// search searches the prepared file under the batch's bound (skipped
// whole when its lower bound exceeds it) and fills its result.
func (o *fileSearch) search(bound *vector.Bound) error {
	res := o.result
	if o.done {
		return nil
	}
	var hits []vector.Hit
	var st vector.Stats
	var err error
	switch {
	case o.ix != nil && o.lower > float64(bound.Value()):
		// every row is farther than the k-th nearest found: none can be in the top-K
		res.SearchedBy, res.ListsPruned = o.kind, int32(o.ix.NList())
		return nil
	case o.ix != nil:
		q := o.q
		q.Bound = bound
		hits, st, err = o.ix.SearchPacked(o.mat, o.pk, q)
		res.SearchedBy = o.kind
		if st.Exact {
			res.SearchedBy = "exact"
		}
	default:
		hits, st, err = vector.Exact(o.mat, o.q)
		res.SearchedBy = "exact"
	}
	if err != nil { // a dimension mismatch or a bad query
		return perr.New(perr.InvalidArgument, "%v", err)
	}
	o.hits = hits
	res.VectorsScored, res.VectorsApprox, res.ListsProbed, res.ListsPruned = st.Scored, st.Approx, int32(st.Probed), int32(st.Pruned)
	return nil
}

// packedLists returns the file's vectors in the ivf index's list layout
// from the cache, else packs them (a copy of the matrix, list by list;
// for ivf_pq only the lists' radii, which let the batch's Bound skip its
// lists and the file); nil when they do not fit the index (the search
// then gathers rows, and skips nothing). They are cached by the SHA-256 of
// the payload they were packed for (opened only when it is the committed
// one), so lists packed for one payload never meet another's.
func (s *Service) packedLists(f *pushdown_pb.VectorSearchFile, identity string, fieldID int, ix *vector.Index, mat *vector.Matrix) *vector.Packed {
	key := fmt.Sprintf("%s\x00%s\x00%d\x00packed\x00%s\x00%s\x00%s", f.GetPath(), identity, fieldID, f.GetIndexKind(), f.GetIndexIdentity(), f.GetIndexPayloadSha256())
	cache := s.vectorCache()
	if v, ok := cache.Get(key); ok {
		if pk := v.(cachedValue).v.(*vector.Packed); pk.Fits(ix) == nil {
			return pk
		}
	}
	loaded := freshness.Now()
	pack := ix.Pack
	if ix.PQ != nil {
		pack = ix.PackRadii
	}
	pk, err := pack(mat)
	if err != nil {
		return nil
	}
	cache.Add(key, f.GetPath(), loaded, cachedValue{pk, pk.Bytes()}, pk.Bytes())
	return pk
}

func candidates(f *pushdown_pb.VectorSearchFile) (*roaring64.Bitmap, error) {
	if !f.GetHasCandidates() {
		return nil, nil
	}
	m, err := rowbits.Decode(f.GetCandidates())
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "candidates are not a portable roaring64 bitmap: %v", err)
	}
	return m, nil
}

// vectorLoads collapses concurrent loads of the same file's vectors.
var vectorLoads sync.Map // key → *sync.Mutex

// fileVectors returns the file's vectors from the cache, else reads its
// vector column once (concurrent searches of one file wait for one read).
func (s *Service) fileVectors(ctx context.Context, path, identity string, ft *footer.Footer, leaf, fieldID int) (*vector.Matrix, bool, error) {
	key := fmt.Sprintf("%s\x00%s\x00%d", path, identity, fieldID)
	cache := s.vectorCache()
	if m, ok := cache.Get(key); ok {
		return m.(cachedValue).v.(*vector.Matrix), true, nil
	}
	mu, _ := vectorLoads.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	defer vectorLoads.Delete(key)
	if m, ok := cache.Get(key); ok {
		return m.(cachedValue).v.(*vector.Matrix), true, nil
	}
	loaded := freshness.Now()
	fr, err := s.Reader.Open(ctx, path)
	if err != nil {
		return nil, false, classifyOpen(err)
	}
	m, err := sideindex.ReadVectors(ctx, path, ft, sourceOf(fr), leaf)
	if err != nil {
		if perr.IsContext(err) {
			return nil, false, err
		}
		return nil, false, perr.New(perr.FailedPrecondition, "%v", err)
	}
	cache.Add(key, path, loaded, cachedValue{m, m.Bytes()}, m.Bytes())
	return m, false, nil
}

// tableBytes is the size of a table's buffers.
// decodedRowGroup is a row group's projected columns, each one array (its
// chunks concatenated once, when cached), so a read takes rows from it.
type decodedRowGroup struct {
	schema *arrow.Schema
	cols   []arrow.Array
}

func newDecodedRowGroup(t arrow.Table) (*decodedRowGroup, error) {
	g := &decodedRowGroup{schema: t.Schema(), cols: make([]arrow.Array, t.NumCols())}
	for c := range int(t.NumCols()) {
		a, err := oneChunk(t.Column(c).Data().Chunks())
		if err != nil {
			return nil, err
		}
		g.cols[c] = a
	}
	return g, nil
}

// oneChunk is a column's chunks as one array (retained: the caller
// releases it).
func oneChunk(chunks []arrow.Array) (arrow.Array, error) {
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	a, err := array.Concatenate(chunks, memory.DefaultAllocator)
	if err != nil {
		return nil, perr.New(perr.Internal, "%v", err)
	}
	return a, nil
}

func tableBytes(t arrow.Table) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for c := range int(t.NumCols()) {
		for _, a := range t.Column(c).Data().Chunks() {
			add(a.Data())
		}
	}
	return n
}

func rowGroupOf(ft *footer.Footer, pos int64) int {
	first := int64(0)
	for rg := range ft.Meta.NumRowGroups() {
		n := ft.Meta.RowGroup(rg).NumRows()
		if pos < first+n {
			return rg
		}
		first += n
	}
	return -1
}

// projectedKey names row group rg's decoded projected columns (leaves
// cols) of a file in the shared cache.
func projectedKey(path, identity string, rg int, cols []int) string {
	return fmt.Sprintf("%s\x00%s\x00projected\x00%d\x00%v", path, identity, rg, cols)
}

// isAscendingRun says whether idx counts up by one from its first row.
func isAscendingRun(idx []int64) bool {
	for k, i := range idx {
		if i != idx[0]+int64(k) {
			return false
		}
	}
	return true
}

// sliceRows is the most rows of a segment projectRows takes as slices of
// one row each rather than through arrow's take kernel.
const sliceRows = 4

// projectRows reads the projected columns of the row groups holding
// positions and returns exactly those rows, in the order given, as an
// Arrow IPC stream; cached tells whether every row group came decoded
// from the vector cache.
//
// memo nil: decoded row groups are kept in the shared vector cache. A
// caller passing a memo (ScanRows, whose row groups are read once per
// query and would push out what warm queries use) keeps them there
// instead, for its next batches of the same row groups; the shared cache
// is still looked up.
func (s *Service) projectRows(ctx context.Context, path, identity string, ft *footer.Footer, cm *plan.ColumnMap, ids []int32, positions []int64,
	memo map[int]*decodedRowGroup) (out []byte, cached bool, err error) {
	rec, cached, err := s.projectRecord(ctx, path, identity, ft, cm, ids, positions, memo)
	if err != nil {
		return nil, false, err
	}
	defer rec.Release()
	out, err = recordIPC(rec)
	return out, cached, err
}

// recordIPC is rec as an Arrow IPC stream of its own (schema, the batch,
// end of stream).
func recordIPC(rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, perr.New(perr.Internal, "%v", err)
	}
	if err := w.Close(); err != nil {
		return nil, perr.New(perr.Internal, "%v", err)
	}
	return buf.Bytes(), nil
}

// projectRecord is projectRows's rows as a record batch (the caller
// releases it).
func (s *Service) projectRecord(ctx context.Context, path, identity string, ft *footer.Footer, cm *plan.ColumnMap, ids []int32, positions []int64,
	memo map[int]*decodedRowGroup) (out arrow.RecordBatch, cached bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, cached, err = nil, false, perr.New(perr.Corrupt, "decode: %v", p)
		}
	}()
	cached = true
	fids := make([]int, len(ids))
	for i, id := range ids {
		fids[i] = int(id)
	}
	cols := cm.Projection(ft.Meta, fids)
	var fr *pqarrow.FileReader // opened on the first row group not cached
	readRowGroup := func(rg int) (arrow.Table, error) {
		if fr == nil {
			fh, err := s.Reader.Open(ctx, path)
			if err != nil {
				return nil, classifyOpen(err)
			}
			rdr, err := sideindex.OpenParquet(ctx, path, ft, sourceOf(fh))
			if err != nil {
				return nil, perr.New(perr.Corrupt, "%v", err)
			}
			if fr, err = pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 1 << 16}, memory.DefaultAllocator); err != nil {
				return nil, perr.New(perr.Corrupt, "%v", err)
			}
		}
		t, err := fr.ReadRowGroups(ctx, cols, []int{rg})
		if err != nil {
			return nil, perr.Wrap(perr.Unavailable, err)
		}
		return t, nil
	}
	firsts := make([]int64, ft.Meta.NumRowGroups()+1)
	for rg := range ft.Meta.NumRowGroups() {
		firsts[rg+1] = firsts[rg] + ft.Meta.RowGroup(rg).NumRows()
	}
	// A row group's projected columns are decoded once and kept in the
	// vector cache, one array a column (warm queries whose rows fall in it
	// decode nothing); cached arrays are never released (Go-allocated, the
	// collector frees them once evicted). Consecutive positions of one row
	// group are taken at once (arrow's take kernel), in the order given.
	type segment struct {
		rg  int
		idx []int64 // row-group-local rows, in the order given
	}
	var segs []segment
	for _, p := range positions {
		rg := rowGroupOf(ft, p)
		if len(segs) == 0 || segs[len(segs)-1].rg != rg {
			segs = append(segs, segment{rg: rg})
		}
		segs[len(segs)-1].idx = append(segs[len(segs)-1].idx, p-firsts[rg])
	}
	cache := s.vectorCache()
	groups := map[int]*decodedRowGroup{}
	var schema *arrow.Schema
	var parts [][]arrow.Array // per column: one taken array per segment
	defer func() {
		for _, ps := range parts {
			for _, a := range ps {
				a.Release()
			}
		}
	}()
	for _, sg := range segs {
		g, ok := groups[sg.rg]
		if !ok && memo != nil {
			g, ok = memo[sg.rg]
		}
		if !ok {
			key := projectedKey(path, identity, sg.rg, cols)
			if v, hit := cache.Get(key); hit {
				g = v.(cachedValue).v.(*decodedRowGroup)
			} else {
				loaded := freshness.Now()
				cached = false
				t, err := readRowGroup(sg.rg)
				if err != nil {
					return nil, false, err
				}
				if g, err = newDecodedRowGroup(t); err != nil {
					return nil, false, err
				}
				n := tableBytes(t)
				t.Release()
				if memo != nil {
					memo[sg.rg] = g
				} else {
					cache.Add(key, path, loaded, cachedValue{g, n}, n)
				}
			}
			groups[sg.rg] = g
		}
		// set from the first group, whichever way it came (decoded, the
		// shared cache or the caller's memo: a ScanRows batch after the
		// first of a row group finds it there)
		if schema == nil {
			schema = g.schema
			parts = make([][]arrow.Array, len(g.cols))
		}
		if run := sg.idx; len(run) > sliceRows && run[len(run)-1]-run[0] == int64(len(run)-1) && isAscendingRun(run) {
			// consecutive rows (a ScanRows batch of a row group every row
			// of which matched): one zero-copy slice, not a copy by take
			for c, col := range g.cols {
				parts[c] = append(parts[c], array.NewSlice(col, run[0], run[0]+int64(len(run))))
			}
			continue
		}
		if len(sg.idx) <= sliceRows {
			// A few rows: zero-copy slices, concatenated below (the take
			// kernel's set-up per call was most of a top-k's projection).
			for c, col := range g.cols {
				for _, i := range sg.idx {
					parts[c] = append(parts[c], array.NewSlice(col, i, i+1))
				}
			}
			continue
		}
		idx := array.NewInt64Builder(memory.DefaultAllocator)
		idx.AppendValues(sg.idx, nil)
		ia := idx.NewInt64Array()
		idx.Release()
		for c, col := range g.cols {
			taken, err := compute.TakeArray(ctx, col, ia)
			if err != nil {
				ia.Release()
				return nil, false, perr.New(perr.Internal, "take: %v", err)
			}
			parts[c] = append(parts[c], taken)
		}
		ia.Release()
	}
	arrs := make([]arrow.Array, len(parts))
	for c, ps := range parts {
		var a arrow.Array
		if len(ps) == 1 {
			a = ps[0]
			a.Retain()
		} else {
			var err error
			if a, err = array.Concatenate(ps, memory.DefaultAllocator); err != nil {
				return nil, false, perr.New(perr.Internal, "%v", err)
			}
		}
		arrs[c] = a
		defer a.Release()
	}
	return array.NewRecordBatch(schema, arrs, int64(len(positions))), cached, nil
}
