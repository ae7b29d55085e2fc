package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3tables"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// FilesPerBuildCall bounds the data files of one volume BuildIndexes call.
const FilesPerBuildCall = 32

// BuildIndexes builds the side indexes the table wants (its
// lakeweed.indexes property) for the live data files of its current
// snapshot that lack a committed one for their current identity, on the
// volume pushdown services holding the files. Without wait it answers at
// once and the builds run in the background.
func (s *Service) BuildIndexes(ctx context.Context, req *pushdown_pb.BuildTableIndexesRequest) (*pushdown_pb.BuildTableIndexesResponse, error) {
	name, err := s.authorizeTableWrite(ctx, "BuildIndexes", req, req.GetWarehouse(), req.GetTable())
	if err != nil {
		return nil, err
	}
	if !req.GetWait() {
		s.builds.enqueue(s, name)
		return &pushdown_pb.BuildTableIndexesResponse{}, nil
	}
	return s.builds.run(ctx, s, name)
}

// ListIndexes reports which indexes the table wants and the registry
// entries of its live data files.
func (s *Service) ListIndexes(ctx context.Context, req *pushdown_pb.ListIndexesRequest) (*pushdown_pb.ListIndexesResponse, error) {
	if len(req.GetTable()) > MaxTableNameBytes || len(req.GetWarehouse()) > MaxWarehouseBytes {
		return nil, perr.New(perr.InvalidArgument, "ListIndexes: table or warehouse name too long")
	}
	name, err := tables.ParseName(req.GetWarehouse(), req.GetTable(), s.Config.Warehouse)
	if err != nil {
		return nil, err
	}
	caller, err := s.callerOf(ctx, "ListIndexes")
	if err != nil {
		return nil, err
	}
	if caller != nil {
		if err := caller.MayReadTable(name.Warehouse, name.Namespace, name.Table); err != nil {
			return nil, err
		}
	}
	tbl, err := s.Tables.Load(ctx, name)
	if err != nil {
		return nil, err
	}
	wanted, err := indexing.Wanted(tbl.Meta.Properties())
	if err != nil {
		return nil, err
	}
	files, err := s.Tables.DataFiles(ctx, tbl, tbl.Meta.CurrentSnapshot())
	if err != nil {
		return nil, err
	}
	all, err := s.Registry.All(ctx, tbl.Meta.TableUUID().String())
	if err != nil {
		return nil, err
	}
	resp := &pushdown_pb.ListIndexesResponse{FilesTotal: int64(len(files.Data))}
	for _, sp := range wanted {
		resp.Wanted = append(resp.Wanted, &pushdown_pb.IndexSpec{FieldId: int32(sp.FieldID), Kind: sp.Kind, Params: sp.Params})
	}
	for _, f := range files.Data {
		if caller != nil && !caller.CanRead(f.Path) {
			continue // a token for part of the table lists only that part
		}
		for _, e := range all[f.Path] {
			resp.Entries = append(resp.Entries, &pushdown_pb.IndexEntry{DataFile: e.DataFile, FieldId: int32(e.FieldID), Kind: e.Kind, Identity: e.Identity,
				PayloadPath: e.PayloadPath, PayloadBytes: e.PayloadBytes, State: e.State, Reason: e.Reason, BuiltUnixMs: e.BuiltUnixMs, VerifiedUnixMs: e.VerifiedMs,
				PayloadSha256: e.PayloadSHA256})
		}
	}
	return resp, nil
}

func (s *Service) authorizeTableWrite(ctx context.Context, method string, req proto.Message, warehouse, table string) (tables.Name, error) {
	if len(table) > MaxTableNameBytes || len(warehouse) > MaxWarehouseBytes {
		return tables.Name{}, perr.New(perr.InvalidArgument, "%s: table or warehouse name too long", method)
	}
	name, err := tables.ParseName(warehouse, table, s.Config.Warehouse)
	if err != nil {
		return name, err
	}
	caller, err := s.callerOf(ctx, method)
	if err != nil {
		return name, err
	}
	if caller != nil {
		if err := caller.MayWriteTable(name.Warehouse, name.Namespace, name.Table); err != nil {
			return name, err
		}
	}
	return name, nil
}

// buildQueue runs table builds: at most one per table at a time, at most
// BuildWorkers tables at once; a table asked for again while queued is
// queued once.
type buildQueue struct {
	mu                   sync.Mutex
	pending              map[string]tables.Name
	running              map[string]*sync.Mutex
	work                 chan struct{}
	started              sync.Once
	done, failed, queued int64
}

// BuildWorkers is how many tables build at once.
const BuildWorkers = 2

func newBuildQueue() *buildQueue {
	return &buildQueue{pending: map[string]tables.Name{}, running: map[string]*sync.Mutex{}, work: make(chan struct{}, 1024)}
}

func (q *buildQueue) enqueue(s *Service, n tables.Name) {
	q.started.Do(func() {
		for w := 0; w < BuildWorkers; w++ {
			safe.Go("index build queue", func() { q.loop(s) })
		}
	})
	key := n.Warehouse + "/" + n.Full
	q.mu.Lock()
	if _, ok := q.pending[key]; !ok {
		q.pending[key] = n
		q.queued++
		metrics.IndexQueue(len(q.pending))
		select {
		case q.work <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
}

func (q *buildQueue) loop(s *Service) {
	for range q.work {
		for {
			q.mu.Lock()
			var n tables.Name
			var key string
			for k, v := range q.pending {
				key, n = k, v
				break
			}
			if key != "" {
				delete(q.pending, key)
				metrics.IndexQueue(len(q.pending))
			}
			q.mu.Unlock()
			if key == "" {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			if resp, err := q.run(ctx, s, n); err != nil {
				glog.Warningf("pushdown: building the side indexes of %s: %v", perr.Quote(n.Full), err)
			} else if resp.Scheduled > 0 {
				glog.V(0).Infof("pushdown: side indexes of %s: %d built, %d failed of %d scheduled", perr.Quote(n.Full), resp.Built, resp.Failed, resp.Scheduled)
			}
			cancel()
		}
	}
}

// health is the one-line side-index summary of Status.
func (q *buildQueue) health() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return fmt.Sprintf("side-index builds since start: %d done, %d failed; %d tables waiting", q.done, q.failed, len(q.pending))
}

func (q *buildQueue) run(ctx context.Context, s *Service, n tables.Name) (*pushdown_pb.BuildTableIndexesResponse, error) {
	key := n.Warehouse + "/" + n.Full
	q.mu.Lock()
	l, ok := q.running[key]
	if !ok {
		l = &sync.Mutex{}
		q.running[key] = l
	}
	q.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	return s.buildTable(ctx, n)
}

type buildTask struct {
	file     *plan.DataFile
	identity string
	specs    []indexing.Spec
}

// buildTable builds what the table wants and its files lack.
func (s *Service) buildTable(ctx context.Context, n tables.Name) (*pushdown_pb.BuildTableIndexesResponse, error) {
	tbl, err := s.Tables.Load(ctx, n)
	if err != nil {
		return nil, err
	}
	resp := &pushdown_pb.BuildTableIndexesResponse{}
	wanted, err := indexing.Wanted(tbl.Meta.Properties())
	if err != nil || len(wanted) == 0 {
		return resp, err
	}
	files, err := s.Tables.DataFiles(ctx, tbl, tbl.Meta.CurrentSnapshot())
	if err != nil {
		return nil, err
	}
	resp.Files = int64(len(files.Data))
	uuid := tbl.Meta.TableUUID().String()
	s.rememberTable(ctx, uuid, n)
	schema := tbl.CurrentSchema()
	byEndpoint := map[string][]buildTask{}
	var mu sync.Mutex
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(32)
	for i := range files.Data {
		f := &files.Data[i]
		g.Go(func() error {
			hash, err := s.Footers.Identify(gctx, f.Path, f.Size, f.RecordCount)
			if err != nil {
				mu.Lock()
				resp.Failed++
				if len(resp.Errors) < 5 {
					resp.Errors = append(resp.Errors, boundedMsg(err))
				}
				mu.Unlock()
				return nil
			}
			identity := footer.IdentityDir(f.Size, f.RecordCount, hash)
			t := buildTask{file: f, identity: identity}
			for _, sp := range wanted {
				e, ok, err := s.Registry.Lookup(gctx, uuid, f.Path, sp.Kind, sp.FieldID)
				if err != nil {
					return err
				}
				if ok && e.Serves(sp, identity) {
					continue
				}
				t.specs = append(t.specs, sp)
			}
			if len(t.specs) == 0 {
				return nil
			}
			addr := s.endpointFor(gctx, f.Path)
			mu.Lock()
			byEndpoint[addr] = append(byEndpoint[addr], t)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	schemaJSON, err := encodeSchema(schema)
	if err != nil {
		return nil, err
	}
	var nmJSON []byte
	if nm := tbl.NameMapping; len(nm) > 0 {
		nmJSON, _ = json.Marshal(nm)
	}
	g, gctx = safe.Group(ctx, "catalog")
	g.SetLimit(8)
	for addr, tasks := range byEndpoint {
		for _, t := range tasks {
			resp.Scheduled += int64(len(t.specs))
		}
		if addr == "" {
			for _, t := range tasks {
				resp.Failed += int64(len(t.specs))
				s.recordBuilt(gctx, uuid, t, nil, "no healthy volume pushdown service holds this file")
			}
			if len(resp.Errors) < 5 {
				resp.Errors = append(resp.Errors, fmt.Sprintf("%d files are held by no healthy volume pushdown service", len(tasks)))
			}
			continue
		}
		for lo := 0; lo < len(tasks); lo += FilesPerBuildCall {
			batch := tasks[lo:min(len(tasks), lo+FilesPerBuildCall)]
			g.Go(func() error {
				built, failed, errs := s.buildOnVolume(gctx, addr, uuid, batch, schemaJSON, nmJSON)
				mu.Lock()
				defer mu.Unlock()
				resp.Built += built
				resp.Failed += failed
				for _, e := range errs {
					if len(resp.Errors) < 5 {
						resp.Errors = append(resp.Errors, e)
					}
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	s.builds.mu.Lock()
	s.builds.done += resp.Built
	s.builds.failed += resp.Failed
	s.builds.mu.Unlock()
	metrics.IndexBuilt("catalog", "done", resp.Built)
	metrics.IndexBuilt("catalog", "failed", resp.Failed)
	return resp, nil
}

// buildOnVolume asks one volume pushdown service to build a batch. Specs
// are grouped so that one call builds the same specs for every file.
func (s *Service) buildOnVolume(ctx context.Context, addr, uuid string, batch []buildTask, schemaJSON, nmJSON []byte) (built, failed int64, errs []string) {
	groups := map[string][]buildTask{}
	for _, t := range batch {
		key := fmt.Sprint(t.specs)
		groups[key] = append(groups[key], t)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		tasks := groups[k]
		req := &pushdown_pb.BuildIndexesRequest{SchemaJson: schemaJSON, NameMappingJson: nmJSON}
		for _, sp := range tasks[0].specs {
			req.Indexes = append(req.Indexes, &pushdown_pb.IndexSpec{FieldId: int32(sp.FieldID), Kind: sp.Kind, Params: sp.Params})
		}
		var named []string
		for _, t := range tasks {
			d, err := descriptor.FromDataFile(t.file, nil, nil)
			if err != nil {
				failed += int64(len(t.specs))
				continue
			}
			req.DataFiles = append(req.DataFiles, d)
			named = append(named, t.file.Path)
			for _, sp := range t.specs {
				s.recordBuilt(ctx, uuid, t, &pushdown_pb.BuiltIndex{DataFile: t.file.Path, FieldId: int32(sp.FieldID), Kind: sp.Kind, Identity: t.identity}, "")
			}
		}
		resp, err := s.callBuild(ctx, addr, req, named)
		if err != nil {
			for _, t := range tasks {
				failed += int64(len(t.specs))
				s.recordBuilt(ctx, uuid, t, nil, err.Error())
			}
			errs = append(errs, boundedMsg(err))
			continue
		}
		byFile := map[string]buildTask{}
		for _, t := range tasks {
			byFile[t.file.Path] = t
		}
		for _, b := range resp.GetBuilt() {
			t, ok := byFile[b.GetDataFile()]
			if !ok {
				continue
			}
			if b.GetError() != "" {
				failed++
				errs = append(errs, fmt.Sprintf("%s of field %d of %s: %s", b.GetKind(), b.GetFieldId(), b.GetDataFile(), b.GetError()))
			} else {
				built++
			}
			s.recordBuilt(ctx, uuid, t, b, b.GetError())
		}
	}
	return built, failed, errs
}

func (s *Service) callBuild(ctx context.Context, addr string, req *pushdown_pb.BuildIndexesRequest, named []string) (*pushdown_pb.BuildIndexesResponse, error) {
	ctx, client, err := s.volumeClient(ctx, addr, named, true)
	if err != nil {
		return nil, err
	}
	resp, err := client.BuildIndexes(ctx, req)
	if err != nil {
		return nil, grpcutil.FromStatus("volume pushdown service "+addr, err)
	}
	return resp, nil
}

// recordBuilt writes a registry entry: building (b without payload and no
// failure), committed (b with a payload) or failed.
func (s *Service) recordBuilt(ctx context.Context, uuid string, t buildTask, b *pushdown_pb.BuiltIndex, failure string) {
	now := time.Now().UnixMilli()
	var entries []indexing.Entry
	if b == nil {
		for _, sp := range t.specs {
			entries = append(entries, indexing.Entry{DataFile: t.file.Path, FieldID: sp.FieldID, Kind: sp.Kind, Identity: t.identity, State: indexing.StateFailed, Reason: boundedString(failure), Params: sp.Params})
		}
	} else {
		e := indexing.Entry{DataFile: t.file.Path, FieldID: int(b.GetFieldId()), Kind: b.GetKind(), Identity: t.identity, State: indexing.StateBuilding}
		for _, sp := range t.specs {
			if sp.FieldID == e.FieldID && sp.Kind == e.Kind {
				e.Params = sp.Params
			}
		}
		switch {
		case failure != "":
			e.State, e.Reason = indexing.StateFailed, boundedString(failure)
		case b.GetPayloadPath() != "":
			e.State, e.PayloadPath, e.PayloadBytes, e.PayloadSHA256, e.BuiltUnixMs, e.VerifiedMs = indexing.StateCommitted, b.GetPayloadPath(), b.GetPayloadBytes(), b.GetPayloadSha256(), now, now
			if b.GetIdentity() != "" {
				e.Identity = b.GetIdentity()
			}
		}
		entries = append(entries, e)
	}
	if err := s.Registry.Put(context.WithoutCancel(ctx), uuid, entries...); err != nil {
		glog.Warningf("pushdown: index registry of %s: %v", uuid, err)
	}
}

func boundedMsg(err error) string { return boundedString(err.Error()) }

func boundedString(s string) string { return perr.Truncate(s, 512) }

// OnTableEntryUpdate schedules the side-index builds of a table whose
// catalog record changed (a commit moves its metadata location): the new
// snapshot's files get the indexes the table wants, with no polling.
func (s *Service) OnTableEntryUpdate(parent string, old, updated *filer_pb.Entry) {
	ext := updated.GetExtended()
	if s3tables.EntryType(ext) != s3tables.EntryTypeTable || bytes.Equal(old.GetExtended()[s3tables.ExtendedKeyMetadata], ext[s3tables.ExtendedKeyMetadata]) {
		return
	}
	rel, ok := strings.CutPrefix(parent, "/buckets/")
	if !ok {
		return
	}
	warehouse, ns, ok := strings.Cut(rel, "/")
	if !ok || ns == "" {
		return
	}
	name, err := tables.ParseName(warehouse, ns+"."+updated.GetName(), s.Config.Warehouse)
	if err != nil {
		return
	}
	s.builds.enqueue(s, name)
}
