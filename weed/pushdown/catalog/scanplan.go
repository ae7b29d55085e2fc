package catalog

import (
	"context"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// ScanRequest asks which data files of a table a scan must read, the
// question of the Iceberg REST scan-planning endpoints (weed/pushdown/restplan).
// The caller has authorized it (as the REST catalog's LoadTable would).
type ScanRequest struct {
	Name       tables.Name
	SnapshotID *int64 // point-in-time scan (nil: the current snapshot)
	// StartSnapshotID (exclusive) and EndSnapshotID (inclusive) ask for an
	// incremental append scan instead.
	StartSnapshotID, EndSnapshotID *int64
	// UseSnapshotSchema binds names against the scanned snapshot's schema
	// (time travel); otherwise against the table's current schema.
	UseSnapshotSchema bool
	// Bind resolves the request's names against the scan's schema: the
	// filter as Iceberg expression JSON with field-id terms (nil: none) and
	// the projected field ids (nil: every column).
	Bind func(schema *iceberg.Schema) (filter []byte, projection []int, err error)
}

// ScanFile is one data file a scan must read, with the delete files that
// apply to it.
type ScanFile struct {
	Data    *plan.DataFile
	Deletes []deletes.File
	// Planned is false for a file handed through without being planned: it
	// lies outside the table's location (its footer is not read on the
	// caller's behalf), so nothing may be said about its rows.
	Planned bool
	// Index is the file's position in the snapshot's file list (the one
	// ScanResult.Derived belongs to).
	Index int
}

// ScanResult is the outcome of PlanScan.
type ScanResult struct {
	Table    *tables.Table
	Snapshot *table.Snapshot // nil: the table has no snapshot
	Schema   *iceberg.Schema // the schema names were bound against
	// Files are the files left, in the snapshot's manifest order.
	Files      []ScanFile
	FilesTotal int // the scan's files before planning
	Stats      *pushdown_pb.PushdownStats
	// Derived is where a caller keeps what it derives once per snapshot
	// from its files (by ScanFile.Index), living as long as the catalog
	// caches the snapshot's file list; nil for incremental scans.
	Derived *sync.Map
}

// PlanScan plans a scan to the file level with the planner's every tier
// (manifest metrics and partitions, footer statistics, bloom filters, page
// indexes, side indexes, deletes) and returns the files that may hold
// matching rows. Soundness is the planner's: a file is dropped only when it
// certainly holds no matching, undeleted row.
func (s *Service) PlanScan(ctx context.Context, req ScanRequest) (*ScanResult, error) {
	tbl, err := s.Tables.Load(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	incremental := req.StartSnapshotID != nil || req.EndSnapshotID != nil
	var snap *table.Snapshot
	switch {
	case incremental && req.SnapshotID != nil:
		return nil, perr.New(perr.InvalidArgument, "snapshot-id cannot be combined with start-snapshot-id/end-snapshot-id")
	case incremental && (req.StartSnapshotID == nil || req.EndSnapshotID == nil):
		return nil, perr.New(perr.InvalidArgument, "an incremental scan needs both start-snapshot-id and end-snapshot-id")
	case incremental:
		snap, err = tbl.Snapshot(req.EndSnapshotID)
	default:
		snap, err = tbl.Snapshot(req.SnapshotID)
	}
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "%v", err)
	}
	schema := tbl.CurrentSchema()
	if req.UseSnapshotSchema && snap != nil {
		if schema, err = tbl.Schema(nil, snap); err != nil {
			return nil, err
		}
	}
	filter, projection, err := req.Bind(schema)
	if err != nil {
		return nil, err
	}
	out := &ScanResult{Table: tbl, Snapshot: snap, Schema: schema}
	if snap == nil {
		return out, nil
	}
	var files []plan.DataFile
	var applied map[string][]deletes.File
	var byPath map[string]int
	if incremental {
		if files, err = s.Tables.AppendedFiles(ctx, tbl, *req.StartSnapshotID, *req.EndSnapshotID); err != nil {
			return nil, err
		}
	} else {
		resolved, err := s.Tables.DataFiles(ctx, tbl, snap)
		if err != nil {
			return nil, err
		}
		files, applied, byPath, out.Derived = resolved.Data, resolved.Applied, resolved.ByPath, &resolved.Derived
	}
	out.FilesTotal = len(files)

	// Only files inside the table's location are planned: the catalog reads
	// their footers and indexes on the caller's behalf, which LoadTable's
	// authorization covers. Any other file is handed through whole.
	inside := insideLocation(tbl.Meta.Location())
	isPlanned := make([]bool, len(files))
	n := 0
	for i := range files {
		f := &files[i]
		ok := inside(f.Path)
		for _, d := range applied[f.Path] {
			ok = ok && inside(d.Path)
		}
		if isPlanned[i] = ok; ok {
			n++
		}
	}
	planned := files // the planner only reads them: no copy when all are inside
	if n < len(files) {
		planned = make([]plan.DataFile, 0, n)
		for i := range files {
			if isPlanned[i] {
				planned = append(planned, files[i])
			}
		}
	}
	if byPath == nil {
		byPath = make(map[string]int, len(files))
		for i := range files {
			byPath[files[i].Path] = i
		}
	}
	kept := make([]bool, len(files))
	if len(planned) > 0 {
		pbReq := &pushdown_pb.ParquetPushdownRequest{Warehouse: req.Name.Warehouse, Table: req.Name.Full}
		if len(filter) > 0 {
			pbReq.PredicateKind, pbReq.Predicate = pushdown_pb.PredicateKind_PREDICATE_ICEBERG, filter
		}
		e, err := s.decodePredicate(pbReq, schema)
		if err != nil {
			return nil, err
		}
		var src plan.DeleteSource
		if len(applied) > 0 {
			src = &deleteSource{s: s, applied: applied, schema: schema, nm: tbl.NameMapping}
		}
		preq := plan.Request{
			Table:      plan.Table{Schema: schema, Specs: tbl.Specs, NameMapping: tbl.NameMapping},
			Files:      planned,
			Predicate:  e,
			Projection: projection,
			Options:    s.Config.Plan,
			Deletes:    src,
		}
		if side := s.newSideIndexSource(tbl.Meta.TableUUID().String(), tbl.Meta.Properties(), schema, pbReq, e); side != nil {
			s.rememberTable(ctx, side.tableUUID, req.Name)
			if len(side.specs) > 0 {
				preq.SideIndex = side
			}
			if len(side.pageSpecs) > 0 {
				preq.SidePages = side
			}
		}
		resp, _, err := s.Planner.Plan(ctx, preq)
		if err != nil {
			return nil, err
		}
		out.Stats = resp.GetStats()
		metrics.ObservePlan(out.Stats, plan.Tiers)
		for _, f := range resp.GetFiles() {
			if f.GetRowGroupsPlanned() > 0 {
				if i, ok := byPath[f.GetFile()]; ok {
					kept[i] = true
				}
			}
		}
	}
	for i := range files {
		if isPlanned[i] && !kept[i] {
			continue
		}
		f := &files[i]
		var ds []deletes.File
		if f.HasDeletes {
			ds = applied[f.Path]
		}
		out.Files = append(out.Files, ScanFile{Data: f, Deletes: ds, Planned: isPlanned[i], Index: i})
	}
	return out, nil
}

// insideLocation reports whether a file path lies under the table location
// loc (the scheme and bucket included), segment-wise.
func insideLocation(loc string) func(string) bool {
	prefix := strings.TrimRight(loc, "/") + "/"
	return func(p string) bool {
		return loc != "" && strings.HasPrefix(p, prefix) && !strings.Contains(p[len(prefix):], "/../") && !strings.HasPrefix(p[len(prefix):], "../")
	}
}

// MetadataLocation is the table's current metadata location (the REST
// front checks a remembered authorization against it).
func (s *Service) MetadataLocation(ctx context.Context, name tables.Name) (string, error) {
	tbl, err := s.Tables.Load(ctx, name)
	if err != nil {
		return "", err
	}
	return tbl.MetadataLocation, nil
}
