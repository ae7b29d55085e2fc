package catalog

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// vectorKinds are the index kinds a vector query can search, preferred
// first.
var vectorKinds = []string{"ivf_pq", "ivf"}

// checkVectorShape checks a vector query before anything is looked up
// (its length is bounded in checkShape).
func checkVectorShape(vq *pushdown_pb.VectorQuery, lim Limits) error {
	switch {
	case vq == nil:
		return nil
	case len(vq.GetVector()) == 0:
		return perr.New(perr.InvalidArgument, "Plan: vector_query has an empty vector")
	case vq.GetTopK() <= 0 || vq.GetTopK() > vector.MaxK:
		return perr.New(perr.InvalidArgument, "Plan: vector_query top_k %d: want 1 to %d", vq.GetTopK(), vector.MaxK)
	case vq.GetNprobe() < 0:
		return perr.New(perr.InvalidArgument, "Plan: vector_query nprobe %d is negative", vq.GetNprobe())
	case !vector.Metric(vq.GetMetric()).Valid():
		return perr.New(perr.InvalidArgument, "Plan: vector_query metric %d is not L2, cosine or dot", vq.GetMetric())
	}
	return nil
}

// vectorFile is one surviving file of a vector plan.
type vectorFile struct {
	req       *pushdown_pb.VectorSearchFile
	endpoints []string // rendezvous order
	plan      *pushdown_pb.VectorFilePlan
	rows      *pushdown_pb.VectorRows // the fused projection of its local top-K
	entry     indexing.Entry          // the registry entry of the index searched (req.index_kind set)
}

// planVectors answers a vector query over the files the scalar tiers left:
// per file a candidate mask, the committed ivf / ivf_pq index when there
// is one, and SearchVectors on the volume pushdown service the file's
// holders rank first by rendezvous hashing (the next on failure); the
// global top-K is merged exactly into row_refs. The mask of a file is
// every live row without a predicate; with one, the rows the side indexes
// matched exactly, or every row when the predicate is only on
// identity-partition columns whose values match (a file whose values do
// not match is not searched), else the rows the tiers left (row groups,
// row ranges, side-index candidates) on which the volume evaluates the
// predicate exactly before searching — deleted rows never.
//
//	scalar plan ─▶ FilePlans ─▶ masks (exact │ partition │ candidates + filter on the volume)
//	      ─▶ registry: committed index? ─▶ rendezvous endpoint
//	      ─▶ SearchVectors per endpoint (batch, projected columns) ─▶ merge top-K
//	      ─▶ row_refs + vector_rows (the winners' columns, fused) + stats.vector
func (s *Service) planVectors(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest, tableUUID string, props iceberg.Properties,
	preq *plan.Request, resp *pushdown_pb.ParquetPushdownResponse, plans []*plan.FilePlan) (*pushdown_pb.ParquetPushdownResponse, error) {
	vq := req.GetVectorQuery()
	schema, nm, e := preq.Table.Schema, preq.Table.NameMapping, preq.Predicate
	field, err := vectorField(vq.GetColumn(), schema)
	if err != nil {
		return nil, err
	}
	filtered := len(req.GetPredicate()) > 0
	if c, ok := e.(predicate.Const); ok && c.Value {
		filtered = false
	}
	wanted, _ := indexing.Wanted(props)
	specs := map[string]indexing.Spec{}
	for _, sp := range wanted {
		if sp.FieldID == field.ID && slices.Contains(vectorKinds, sp.Kind) {
			specs[sp.Kind] = sp
		}
	}
	planned := map[string]bool{}
	for _, pf := range resp.GetFiles() {
		planned[pf.GetFile()] = pf.GetRowGroupsPlanned() > 0
	}
	var files []*vectorFile
	stats := &pushdown_pb.VectorSearchStats{Nprobe: vq.GetNprobe()}
	missing := 0
	for _, fp := range plans {
		if fp.Skipped() || !planned[fp.File.Path] {
			continue
		}
		f := &pushdown_pb.VectorSearchFile{Path: fp.File.Path, SizeBytes: fp.File.Size, RecordCount: fp.File.RecordCount}
		mask, filter, searched, err := vectorMask(&preq.Table, fp, e, filtered)
		if err != nil {
			return nil, err
		}
		if !searched {
			continue
		}
		f.Filter = filter
		candidates := int64(-1)
		if mask != nil {
			if fp.Deleted() != nil {
				mask.AndNot(fp.Deleted())
			}
			mask.RunOptimize()
			var buf bytes.Buffer
			if _, err := mask.WriteTo(&buf); err != nil {
				return nil, perr.New(perr.Internal, "encode candidates: %v", err)
			}
			f.HasCandidates, f.Candidates = true, buf.Bytes()
			candidates = int64(mask.GetCardinality())
		}
		vp := &pushdown_pb.VectorFilePlan{File: fp.File.Path, Candidates: candidates, Filtered: filter}
		vf := &vectorFile{req: f, plan: vp}
		for _, kind := range vectorKinds {
			sp, ok := specs[kind]
			if !ok || s.Registry == nil {
				continue
			}
			en, ok, err := s.Registry.Lookup(ctx, tableUUID, fp.File.Path, kind, field.ID)
			if err != nil {
				return nil, err
			}
			if ok && en.State == indexing.StateCommitted && !en.Commit().Known() {
				s.markEntry(tableUUID, en, indexing.StateStale, indexing.Unhashed)
				continue
			}
			if ok && en.State == indexing.StateCommitted {
				f.IndexKind, f.IndexIdentity, f.IndexParams = kind, en.Identity, sp.Params
				f.IndexPayloadBytes, f.IndexPayloadSha256 = en.PayloadBytes, en.PayloadSHA256
				vp.IndexKind, vp.IndexIdentity = kind, en.Identity
				vf.entry = en
				break
			}
		}
		if f.IndexKind == "" {
			missing++
		}
		files = append(files, vf)
	}
	name := "vector(" + field.Name + ")"
	switch {
	case len(specs) == 0:
		resp.Stats.IndexesMissing = append(resp.Stats.IndexesMissing, name+": no ivf or ivf_pq index wanted; every file searched exactly")
	case missing > 0:
		resp.Stats.IndexesMissing = append(resp.Stats.IndexesMissing, fmt.Sprintf("%s: %d of %d files have no committed index; searched exactly", name, missing, len(files)))
	}
	if err := s.placeVectorFiles(ctx, files); err != nil {
		return nil, err
	}
	schemaJSON, err := encodeSchema(schema)
	if err != nil {
		return nil, err
	}
	var nmJSON []byte
	if nm != nil {
		nmJSON, _ = json.Marshal(nm)
	}
	base := &pushdown_pb.SearchVectorsRequest{SchemaJson: schemaJSON, NameMappingJson: nmJSON, FieldId: int32(field.ID), Vector: vq.GetVector(),
		Metric: vq.GetMetric(), TopK: vq.GetTopK(), Nprobe: vq.GetNprobe()}
	for _, id := range preq.Projection {
		base.ProjectedFieldIds = append(base.ProjectedFieldIds, int32(id))
	}
	if slices.ContainsFunc(files, func(f *vectorFile) bool { return f.req.GetFilter() }) {
		base.PredicateKind, base.Predicate = req.GetPredicateKind(), req.GetPredicate()
	}
	refs, results, err := s.searchVectorFiles(ctx, base, files)
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		r := results[i]
		f.plan.SearchedBy, f.plan.MaskRows = r.GetSearchedBy(), r.GetMaskRows()
		if r.GetMaskRows() >= 0 {
			stats.MaskRows += r.GetMaskRows()
		}
		if f.req.GetFilter() {
			stats.FilesFiltered++
		}
		if r.GetIndexState() != "" {
			resp.Stats.IndexesMissing = append(resp.Stats.IndexesMissing, fmt.Sprintf("%s of %s: %s (%s); searched exactly", f.req.GetIndexKind(), f.req.GetPath(), r.GetIndexState(), r.GetReason()))
			if f.req.GetIndexKind() != "" {
				s.markEntry(tableUUID, f.entry, r.GetIndexState(), r.GetReason())
			}
		}
		if r.GetSearchedBy() == "exact" {
			stats.FilesExact++
		} else {
			stats.FilesByIndex++
			resp.Stats.IndexesUsed = append(resp.Stats.IndexesUsed, fmt.Sprintf("%s(%s)", r.GetSearchedBy(), field.Name))
		}
		stats.VectorsScored += r.GetVectorsScored()
		stats.ListsPruned += int64(r.GetListsPruned())
		if r.GetListsPruned() > 0 && r.GetListsProbed() == 0 {
			stats.FilesPruned++
		}
		stats.VectorsApprox += r.GetVectorsApprox()
		stats.MaxListsProbed = max(stats.MaxListsProbed, r.GetListsProbed())
		stats.Files = append(stats.Files, f.plan)
	}
	resp.Stats.IndexesUsed = compactStrings(resp.Stats.IndexesUsed)
	slices.SortStableFunc(refs, func(a, b *pushdown_pb.ScoredRowRef) int {
		return cmp.Or(cmp.Compare(a.GetScore(), b.GetScore()), cmp.Compare(a.GetRef().GetFile(), b.GetRef().GetFile()),
			cmp.Compare(a.GetRef().GetFilePosition(), b.GetRef().GetFilePosition()))
	})
	resp.RowRefs = refs[:min(len(refs), int(vq.GetTopK()))]
	winners := map[string]bool{}
	for _, r := range resp.RowRefs {
		winners[r.GetRef().GetFile()] = true
	}
	for _, f := range files {
		if f.rows != nil && winners[f.rows.File] {
			resp.VectorRows = append(resp.VectorRows, f.rows)
		}
	}
	resp.Stats.Vector = stats
	return resp, nil
}

// vectorMask is the candidate mask of one file of a vector plan (before
// deletes; nil: every row), whether the volume must evaluate the predicate
// on it, and whether the file is searched at all.
func vectorMask(t *plan.Table, fp *plan.FilePlan, e predicate.Expr, filtered bool) (mask *roaring64.Bitmap, filter, searched bool, err error) {
	switch {
	case !filtered:
		if fp.Deleted() != nil && !fp.Deleted().IsEmpty() {
			mask = roaring64.New()
			mask.AddRange(0, uint64(fp.File.RecordCount))
		}
		return mask, false, true, nil
	case fp.SideIndexExact && fp.SideIndex != nil:
		return fp.SideIndex.Clone(), false, true, nil
	}
	if r := predicate.Residuals(e); len(r) > 0 {
		return nil, false, false, perr.New(perr.FailedPrecondition, "Plan: vector_query with a predicate that has a part no tier can evaluate exactly (%s) and no side index answers: the search cannot be restricted to matching rows", perr.Quote(r[0]))
	}
	if row, ok := plan.IdentityRow(t, fp.File, e); ok {
		// Every row holds these values: the whole file matches or none does.
		if predicate.Eval(e, row, predicate.IEEE) != predicate.True {
			return nil, false, false, nil
		}
		return vectorMask(t, fp, e, false)
	}
	for _, id := range predicate.FieldIDs(e) {
		name, _ := t.Schema.FindColumnName(id)
		if !slices.ContainsFunc(t.Schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id }) {
			return nil, false, false, perr.New(perr.FailedPrecondition, "Plan: vector_query with a predicate on the nested column %s needs a side index that answers it exactly (the volume evaluates top-level columns only)", perr.Quote(name))
		}
		if fp.Columns != nil && len(fp.Columns.Leaves(id)) == 0 && plan.IsIdentitySource(t, fp.File, id) {
			return nil, false, false, perr.New(perr.FailedPrecondition, "Plan: vector_query: %s stores no column %s (only its partition value) and the predicate also needs other columns; a side index that answers it exactly is needed", perr.Quote(fp.File.Path), perr.Quote(name))
		}
	}
	return plannedRows(fp), true, true, nil
}

// plannedRows are the file positions the scalar tiers left: the rows of
// the row groups (and row ranges) not skipped, within the side indexes'
// candidates.
func plannedRows(fp *plan.FilePlan) *roaring64.Bitmap {
	m := roaring64.New()
	if fp.Footer == nil || fp.NumRowGroups() != fp.Footer.Meta.NumRowGroups() {
		m.AddRange(0, uint64(fp.File.RecordCount))
	} else {
		first := int64(0)
		for i := range fp.NumRowGroups() {
			rg := fp.RowGroup(i)
			n := fp.Footer.Meta.RowGroup(i).NumRows()
			switch {
			case rg.Skip:
			case rg.Rows == nil:
				m.AddRange(uint64(first), uint64(first+n))
			default:
				for _, r := range rg.Rows {
					if lo, hi := max(r.Start, 0), min(r.End, n); lo < hi {
						m.AddRange(uint64(first+lo), uint64(first+hi))
					}
				}
			}
			first += n
		}
	}
	if fp.SideIndex != nil {
		m.And(fp.SideIndex)
	}
	return m
}

func compactStrings(xs []string) []string {
	sort.Strings(xs)
	return slices.Compact(xs)
}

// vectorField resolves the query's column: by field id, else by name.
func vectorField(c *pushdown_pb.ColumnRef, schema *iceberg.Schema) (iceberg.NestedField, error) {
	var f iceberg.NestedField
	var ok bool
	if c.GetFieldId() != 0 {
		f, ok = schema.FindFieldByID(int(c.GetFieldId()))
	} else {
		f, ok = schema.FindFieldByName(c.GetPath())
	}
	if !ok {
		return f, perr.New(perr.InvalidArgument, "Plan: vector_query column (field id %d, path %s) is not in the schema", c.GetFieldId(), perr.Quote(c.GetPath()))
	}
	if !sideindex.IsVectorType(f.Type) {
		return f, perr.New(perr.InvalidArgument, "Plan: vector_query column %s is %s, not a vector (a list of float or double)", perr.Quote(f.Name), f.Type)
	}
	return f, nil
}

// placeVectorFiles orders each file's healthy holders by rendezvous hash
// of (file, endpoint): the same file goes to the same endpoint every time
// and a new or lost endpoint moves only its share of files.
func (s *Service) placeVectorFiles(ctx context.Context, files []*vectorFile) error {
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(32)
	for _, f := range files {
		g.Go(func() error {
			f.endpoints = s.vectorEndpoints(gctx, f.req.GetPath())
			if len(f.endpoints) == 0 {
				return perr.New(perr.Unavailable, "Plan: no healthy volume pushdown service holds %s, so its vectors cannot be searched", f.req.GetPath())
			}
			f.plan.Endpoint = f.endpoints[0]
			return nil
		})
	}
	return g.Wait()
}

func (s *Service) vectorEndpoints(ctx context.Context, path string) []string {
	if s.Watcher == nil || s.Reader == nil {
		return nil
	}
	var eps []string
	for _, vs := range s.holderServers(ctx, path) {
		if ep, ok := s.Watcher.ForVolumeServer(vs); ok && !slices.Contains(eps, ep.Address) {
			eps = append(eps, ep.Address)
		}
	}
	score := func(ep string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write([]byte(ep))
		return h.Sum64()
	}
	slices.SortFunc(eps, func(a, b string) int { return cmp.Compare(score(b), score(a)) })
	return eps
}

// searchVectorFiles calls SearchVectors once per endpoint for the files
// placed there; files of a call that fails move to their next endpoint,
// and a file that no endpoint could search fails the plan naming it.
func (s *Service) searchVectorFiles(ctx context.Context, base *pushdown_pb.SearchVectorsRequest, files []*vectorFile) ([]*pushdown_pb.ScoredRowRef, []*pushdown_pb.VectorFileResult, error) {
	results := make([]*pushdown_pb.VectorFileResult, len(files))
	var refs []*pushdown_pb.ScoredRowRef
	var mu sync.Mutex
	attempt := make([]int, len(files))
	pending := make([]int, len(files))
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		byEndpoint := map[string][]int{}
		for _, i := range pending {
			if attempt[i] >= len(files[i].endpoints) {
				return nil, nil, perr.New(perr.Unavailable, "Plan: every volume pushdown service holding %s failed to search it", files[i].req.GetPath())
			}
			ep := files[i].endpoints[attempt[i]]
			byEndpoint[ep] = append(byEndpoint[ep], i)
		}
		var failed []int
		g, gctx := safe.Group(ctx, "catalog")
		g.SetLimit(16)
		for ep, idx := range byEndpoint {
			for lo := 0; lo < len(idx); lo += 256 {
				batch := idx[lo:min(len(idx), lo+256)]
				g.Go(func() error {
					r, err := s.callSearch(gctx, ep, base, files, batch)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if perr.IsContext(err) {
							return err
						}
						if k := perr.KindOf(err); k != perr.Unavailable && k != perr.Internal {
							return err // the query or a file is wrong: another holder would say the same
						}
						glog.Warningf("pushdown: SearchVectors on %s failed (%v); retrying its %d files on their next holder", ep, err, len(batch))
						for _, i := range batch {
							attempt[i]++
							failed = append(failed, i)
						}
						return nil
					}
					for j, i := range batch {
						results[i] = r.GetFiles()[j]
						files[i].plan.Endpoint = ep
						if ipc := r.GetFiles()[j].GetColumnsIpc(); len(ipc) > 0 {
							rows := &pushdown_pb.VectorRows{File: files[i].req.GetPath(), ColumnsIpc: ipc}
							for _, ref := range r.GetRowRefs() {
								if ref.GetRef().GetFile() == rows.File {
									rows.Positions = append(rows.Positions, ref.GetRef().GetFilePosition())
								}
							}
							files[i].rows = rows
						}
					}
					refs = append(refs, r.GetRowRefs()...)
					return nil
				})
			}
		}
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
		pending = failed
	}
	return refs, results, nil
}

func (s *Service) callSearch(ctx context.Context, addr string, base *pushdown_pb.SearchVectorsRequest, files []*vectorFile, batch []int) (*pushdown_pb.SearchVectorsResponse, error) {
	req := &pushdown_pb.SearchVectorsRequest{SchemaJson: base.SchemaJson, NameMappingJson: base.NameMappingJson, FieldId: base.FieldId,
		Vector: base.Vector, Metric: base.Metric, TopK: base.TopK, Nprobe: base.Nprobe, PredicateKind: base.PredicateKind, Predicate: base.Predicate,
		ProjectedFieldIds: base.ProjectedFieldIds}
	var named []string
	for _, i := range batch {
		req.Files = append(req.Files, files[i].req)
		named = append(named, files[i].req.GetPath())
	}
	ctx, client, err := s.volumeClient(ctx, addr, named, false)
	if err != nil {
		return nil, err
	}
	resp, err := client.SearchVectors(ctx, req)
	if err != nil {
		return nil, grpcutil.FromStatus("volume pushdown service "+addr, err)
	}
	if len(resp.GetFiles()) != len(batch) {
		return nil, perr.New(perr.Internal, "volume pushdown service %s answered %d files of %d", addr, len(resp.GetFiles()), len(batch))
	}
	return resp, nil
}
