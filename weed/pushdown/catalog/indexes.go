package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// sideIndexSource answers a plan's predicate from the side indexes the
// registry says are committed: one EvaluateIndexes call per volume
// endpoint holding the payloads, never a payload byte read here. Anything
// missing — no entry, an endpoint down, a stale or corrupt payload —
// answers "unknown" for its leaves and is named in indexes_missing.
type sideIndexSource struct {
	s         *Service
	tableUUID string
	specs     []indexing.Spec // wanted by the table, on fields the predicate uses
	// pageFields have a page_index wanted (served to the page tier of
	// files written without a page index; see pagesource.go).
	pageSpecs map[int]indexing.Spec
	schema    *iceberg.Schema
	req       *pushdown_pb.ParquetPushdownRequest
	e         predicate.Expr
}

// newSideIndexSource returns the source of a plan, or nil when the table
// wants no index on a field the predicate uses and no page index at all.
func (s *Service) newSideIndexSource(tableUUID string, props iceberg.Properties, schema *iceberg.Schema, req *pushdown_pb.ParquetPushdownRequest, e predicate.Expr) *sideIndexSource {
	if s.Registry == nil || len(req.GetPredicate()) == 0 {
		return nil
	}
	wanted, err := indexing.Wanted(props)
	if err != nil {
		glog.V(1).Infof("pushdown: table %s: %v", tableUUID, err)
		return nil
	}
	fields := map[int]bool{}
	predicate.Walk(e, func(l *predicate.Leaf) { fields[l.FieldID] = true })
	src := &sideIndexSource{s: s, tableUUID: tableUUID, schema: schema, req: req, e: e}
	for _, sp := range wanted {
		if _, ok := sideindex.Lookup(sp.Kind); !ok {
			continue
		}
		if sp.Kind == pageIndexKind {
			// Served to the page tier (pagesource.go), which evaluates the
			// leaves on it as on a native page index: asking the volume to
			// evaluate it too would only repeat that work.
			if src.pageSpecs == nil {
				src.pageSpecs = map[int]indexing.Spec{}
			}
			src.pageSpecs[sp.FieldID] = sp
			continue
		}
		if fields[sp.FieldID] {
			src.specs = append(src.specs, sp)
		}
	}
	if len(src.specs) == 0 && len(src.pageSpecs) == 0 {
		return nil
	}
	return src
}

type probeRef struct {
	file  int
	spec  indexing.Spec
	entry indexing.Entry
}

func (src *sideIndexSource) Select(ctx context.Context, files []*plan.DataFile, first int64) ([]*roaring64.Bitmap, plan.SideIndexNotes, error) {
	out := make([]*roaring64.Bitmap, len(files))
	notes := plan.SideIndexNotes{Used: make([][]string, len(files)), Missing: make([][]string, len(files)), Exact: make([]bool, len(files)),
		Cut: make([]bool, len(files)), Skipped: make([]bool, len(files))}
	if !src.answersWhole() {
		// Cut answers are asked only where a file's answer is its one
		// leaf's from one index: intersections and unions of cut answers
		// are not the first positions of anything.
		first = 0
	}
	byEndpoint, err := src.locate(ctx, files, func(int) []indexing.Spec { return src.specs }, notes.Missing)
	if err != nil {
		return nil, notes, err
	}
	schemaJSON, err := encodeSchema(src.schema)
	if err != nil {
		return nil, notes, err
	}
	// answers[file][leaf] intersects what every index of the leaf's field said.
	answers := make([]map[string]indexing.Answer, len(files))
	for i := range answers {
		answers[i] = map[string]indexing.Answer{}
	}
	var mu sync.Mutex
	err = forEachBatch(ctx, byEndpoint, func(gctx context.Context, addr string, batch []probeRef) error {
		resp, err := src.evaluate(gctx, addr, files, batch, schemaJSON, first)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if perr.IsContext(err) {
				return err
			}
			glog.Warningf("pushdown: volume pushdown service %s could not evaluate side indexes (%v); planning without them", addr, err)
			for _, p := range batch {
				notes.Missing[p.file] = append(notes.Missing[p.file], fmt.Sprintf("%s: volume pushdown service %s unavailable", specName(src.schema, p.spec), addr))
			}
			return nil
		}
		failed := map[int32]bool{}
		for _, pe := range resp.GetErrors() {
			if pe.GetProbe() < 0 || int(pe.GetProbe()) >= len(batch) {
				continue
			}
			p := batch[pe.GetProbe()]
			failed[pe.GetProbe()] = true
			notes.Missing[p.file] = append(notes.Missing[p.file], fmt.Sprintf("%s: %s (%s)", specName(src.schema, p.spec), pe.GetState(), pe.GetReason()))
			src.s.markEntry(src.tableUUID, p.entry, pe.GetState(), pe.GetReason())
		}
		usedProbe, answered := map[int32]bool{}, make([]bool, len(batch))
		for _, la := range resp.GetAnswers() {
			if la.GetProbe() < 0 || int(la.GetProbe()) >= len(batch) || failed[la.GetProbe()] {
				continue
			}
			answered[la.GetProbe()] = true
			if la.GetUnknown() {
				// not evaluated: the files before it hold the LIMIT's rows
				notes.Skipped[batch[la.GetProbe()].file] = la.GetSkipped() && first > 0
				continue
			}
			if la.GetCut() && (first <= 0 || !la.GetExact()) {
				// cut unasked, or an inexact answer cut: it says nothing of
				// the rows after it
				continue
			}
			p := batch[la.GetProbe()]
			bm, err := rowbits.Decode(la.GetPositions())
			if len(la.GetPositions()) == 0 && err == nil {
				err = errors.New("no bytes") // an answer is never empty bytes: unknown, not "none match"
			}
			if err != nil {
				glog.Warningf("pushdown: volume pushdown service %s answered undecodable positions for %s of %s; ignoring them", addr, p.spec.Key(), files[p.file].Path)
				continue
			}
			m := answers[p.file]
			exact := la.GetExact()
			if prev, ok := m[la.GetLeaf()]; ok {
				bm.And(prev.Positions) // an exact set meeting a superset stays exact
				exact = exact || prev.Exact
			}
			m[la.GetLeaf()] = indexing.Answer{Positions: bm, Exact: exact}
			notes.Cut[p.file] = la.GetCut()
			if !usedProbe[la.GetProbe()] {
				usedProbe[la.GetProbe()] = true
				notes.Used[p.file] = append(notes.Used[p.file], specName(src.schema, p.spec))
			}
		}
		for j, p := range batch {
			if !answered[j] && !failed[int32(j)] {
				// never silent: a probe the volume neither answered nor refused
				notes.Missing[p.file] = append(notes.Missing[p.file], fmt.Sprintf("%s: volume pushdown service %s gave no answer", specName(src.schema, p.spec), addr))
			}
		}
		return nil
	})
	if err != nil {
		return nil, notes, err
	}
	// answers are keyed by the leaf as printed; printed once (a leaf of
	// 100,000 literals prints in tens of milliseconds)
	leafNames := map[*predicate.Leaf]string{}
	predicate.Walk(src.e, func(l *predicate.Leaf) { leafNames[l] = l.String() })
	for i := range files {
		if len(answers[i]) == 0 {
			continue
		}
		m := answers[i]
		if a := indexing.CombineExact(src.e, func(l *predicate.Leaf) indexing.Answer {
			name, ok := leafNames[l]
			if !ok {
				name = l.String()
			}
			if a, ok := m[name]; ok {
				return a
			}
			return indexing.Answer{Unknown: true}
		}); !a.Unknown {
			out[i] = a.Positions
			notes.Exact[i] = a.Exact
		}
		sort.Strings(notes.Used[i])
	}
	return out, notes, nil
}

// locate looks up the registry entries of the specs of each file and
// groups the committed ones by the volume endpoint holding the file; what
// is not committed or held by no healthy endpoint is added to missing.
func (src *sideIndexSource) locate(ctx context.Context, files []*plan.DataFile, specsOf func(file int) []indexing.Spec, missing [][]string) (map[string][]probeRef, error) {
	byEndpoint := map[string][]probeRef{}
	var mu sync.Mutex
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(32)
	for i, f := range files {
		g.Go(func() error {
			for _, sp := range specsOf(i) {
				e, ok, err := src.s.Registry.Lookup(gctx, src.tableUUID, f.Path, sp.Kind, sp.FieldID)
				if err != nil {
					return err
				}
				var why, addr string
				switch {
				case !ok:
					why = "not built"
				case e.State != indexing.StateCommitted:
					why = e.State
				case !maps.Equal(e.Params, sp.Params):
					why = "built with other parameters"
				case !e.Commit().Known():
					why = indexing.StateStale + " (" + indexing.Unhashed + ")"
					src.s.markEntry(src.tableUUID, e, indexing.StateStale, indexing.Unhashed)
				default:
					if addr = src.s.endpointFor(gctx, f.Path); addr == "" {
						why = "no healthy volume pushdown service holds it"
					}
				}
				mu.Lock()
				if why != "" {
					missing[i] = append(missing[i], specName(src.schema, sp)+": "+why)
				} else {
					byEndpoint[addr] = append(byEndpoint[addr], probeRef{file: i, spec: sp, entry: e})
				}
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, probes := range byEndpoint {
		// in file order: a LIMIT's answers stop after the files holding its rows
		sort.Slice(probes, func(a, b int) bool { return probes[a].file < probes[b].file })
	}
	return byEndpoint, nil
}

// forEachBatch calls fn with each endpoint's probes in batches of at most
// 1,024, 16 calls at a time.
func forEachBatch(ctx context.Context, byEndpoint map[string][]probeRef, fn func(ctx context.Context, addr string, batch []probeRef) error) error {
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(16)
	for addr, probes := range byEndpoint {
		for lo := 0; lo < len(probes); lo += 1024 {
			batch := probes[lo:min(len(probes), lo+1024)]
			g.Go(func() error { return fn(gctx, addr, batch) })
		}
	}
	return g.Wait()
}

// answersWhole says each file's answer is one probe's answer to the
// predicate's only leaf: one leaf, one index on its field.
func (src *sideIndexSource) answersWhole() bool {
	leaves := 0
	predicate.Walk(src.e, func(*predicate.Leaf) { leaves++ })
	return leaves == 1 && len(src.specs) == 1
}

func (src *sideIndexSource) evaluate(ctx context.Context, addr string, files []*plan.DataFile, batch []probeRef, schemaJSON []byte, first int64) (*pushdown_pb.EvaluateIndexesResponse, error) {
	req := &pushdown_pb.EvaluateIndexesRequest{PredicateKind: src.req.GetPredicateKind(), Predicate: src.req.GetPredicate(), SchemaJson: schemaJSON, FirstPositions: uint64(max(0, first))}
	var named []string
	for _, p := range batch {
		f := files[p.file]
		req.Probes = append(req.Probes, probeOf(f, p, p.spec.Kind))
		named = append(named, f.Path)
	}
	ctx, client, err := src.s.volumeClient(ctx, addr, named, false)
	if err != nil {
		return nil, err
	}
	resp, err := client.EvaluateIndexes(ctx, req)
	if err != nil {
		return nil, grpcutil.FromStatus("volume pushdown service "+addr, err)
	}
	return resp, nil
}

// probeOf names the committed payload of p (an index of kind on file f)
// to a volume: the file, the identity it was built against, its build
// parameters and the payload's committed size and SHA-256.
func probeOf(f *plan.DataFile, p probeRef, kind string) *pushdown_pb.IndexProbe {
	return &pushdown_pb.IndexProbe{DataFile: f.Path, SizeBytes: f.Size, RecordCount: f.RecordCount, FieldId: int32(p.spec.FieldID), Kind: kind,
		Identity: p.entry.Identity, Params: p.spec.Params, PayloadBytes: p.entry.PayloadBytes, PayloadSha256: p.entry.PayloadSHA256}
}

// markEntry records in the registry that an entry could not be used,
// unless the entry was rebuilt meanwhile (another payload committed).
func (s *Service) markEntry(tableUUID string, e indexing.Entry, state, reason string) {
	if state == "" || state == e.State {
		return
	}
	e.State, e.Reason = state, reason
	safe.Go("mark a registry entry", func() {
		cur, ok, err := s.Registry.Lookup(context.Background(), tableUUID, e.DataFile, e.Kind, e.FieldID)
		if err != nil || !ok || cur.BuiltUnixMs != e.BuiltUnixMs || cur.PayloadSHA256 != e.PayloadSHA256 || cur.Identity != e.Identity {
			return
		}
		if err := s.Registry.Put(context.Background(), tableUUID, e); err != nil {
			glog.V(1).Infof("pushdown: mark %s: %v", e, err)
		}
	})
}

// specName names an index in notes: kind(column).
func specName(schema *iceberg.Schema, sp indexing.Spec) string {
	name := fmt.Sprintf("field %d", sp.FieldID)
	if f, ok := schema.FindFieldByID(sp.FieldID); ok {
		name = f.Name
	}
	return sp.Kind + "(" + name + ")"
}
