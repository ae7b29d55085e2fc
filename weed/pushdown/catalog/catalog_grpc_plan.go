package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// plan answers what a connector must read for a query over a table.
//
// Without data_files the catalog resolves the snapshot itself (trust mode
// CATALOG_RESOLVED). With data_files the connector did Iceberg planning and
// the endpoint's trust mode decides: connector-trusted accepts them from
// callers proven by mTLS or a signed token; catalog-validated checks each
// file and its delete list against the snapshot's manifests.
//
// Order matters: the request's shape is checked first (bounded, nothing
// looked up), then the caller is authenticated and authorized for the
// table's folder, and only then is anything looked up — an unauthorized
// caller gets the same PERMISSION_DENIED whether or not the table,
// snapshot or column exists.
func (s *Service) plan(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	if err := checkShape(req, s.Config.Limits); err != nil {
		return nil, err
	}
	name, err := tables.ParseName(req.GetWarehouse(), req.GetTable(), s.Config.Warehouse)
	if err != nil {
		return nil, err
	}
	caller, err := s.callerOf(ctx, "Plan")
	if err != nil {
		return nil, err
	}
	if caller != nil {
		if err := caller.MayReadTable(name.Warehouse, name.Namespace, name.Table); err != nil {
			return nil, err
		}
	}
	if len(req.GetDataFiles()) > 0 && s.Trust.Mode == pushdown_pb.TrustMode_CONNECTOR_TRUSTED {
		if err := s.Trust.authorizeConnector(ctx, caller, req); err != nil {
			return nil, metrics.Refused(metrics.ReasonTrust, err)
		}
	}
	tbl, err := s.Tables.Load(ctx, name)
	if err != nil {
		return nil, err
	}
	snap, err := tbl.Snapshot(optional(req.SnapshotId))
	if err != nil {
		return nil, err
	}
	schema, err := tbl.Schema(optional(req.SchemaId), snap)
	if err != nil {
		return nil, err
	}
	e, err := s.decodePredicate(req, schema)
	if err != nil {
		return nil, err
	}
	projection, err := resolveColumns(req.GetColumns(), schema)
	if err != nil {
		return nil, err
	}
	specs := tbl.Specs
	dt := &descriptor.Table{Specs: specs, Schemas: tbl.Schemas()}

	var files []plan.DataFile
	var applied map[string][]deletes.File
	trust := pushdown_pb.TrustMode_CATALOG_RESOLVED
	var snapID int64
	if snap != nil {
		snapID = snap.SnapshotID
	}
	if len(req.GetDataFiles()) == 0 {
		resolved, err := s.Tables.DataFiles(ctx, tbl, snap)
		if err != nil {
			return nil, err
		}
		files, applied = resolved.Data, resolved.Applied
	} else {
		trust = s.Trust.Mode
		switch trust {
		case pushdown_pb.TrustMode_CONNECTOR_TRUSTED:
			applied = map[string][]deletes.File{}
			seen := map[string]int{}
			for i, d := range req.GetDataFiles() {
				what := fmt.Sprintf("data_files[%d]", i)
				f, dels, err := descriptor.ToDataFile(what, d, dt)
				if err != nil {
					return nil, err
				}
				if j, dup := seen[f.Path]; dup {
					return nil, perr.New(perr.InvalidArgument, "%s %s repeats data_files[%d]", what, f.Path, j)
				}
				seen[f.Path] = i
				files = append(files, f)
				if len(dels) > 0 {
					applied[f.Path] = dels
				}
			}
		case pushdown_pb.TrustMode_CATALOG_VALIDATED:
			resolved, err := s.Tables.DataFiles(ctx, tbl, snap)
			if err != nil {
				return nil, err
			}
			if files, applied, err = validateFiles(req.GetTable(), snapID, req.GetDataFiles(), resolved, dt); err != nil {
				return nil, metrics.Refused(metrics.ReasonTrust, err)
			}
		default:
			return nil, perr.New(perr.Internal, "trust mode %s is not a mode for client-resolved plans", trust)
		}
	}
	if err := s.authorizeFiles(ctx, caller, files, applied); err != nil {
		return nil, err
	}
	var src plan.DeleteSource
	if len(applied) > 0 {
		src = &deleteSource{s: s, applied: applied, schema: schema, nm: tbl.NameMapping}
	}
	preq := plan.Request{
		Table:      plan.Table{Schema: schema, Specs: specs, NameMapping: tbl.NameMapping},
		Files:      files,
		Predicate:  e,
		Projection: projection,
		Options:    s.Config.Plan,
		Deletes:    src,
		RowIDs:     req.GetRequestRowIds(),
		MaxRowIDs:  req.GetMaxRowIds(),
		// vector and row-id plans need every file's plan
		DecideEarly:  req.GetDecideEarly() && req.GetVectorQuery() == nil && !req.GetRequestRowIds(),
		RowPositions: req.GetAcceptsRowPositions(),
	}
	if req.GetVectorQuery() == nil && !req.GetRequestRowIds() {
		// a vector plan's limit is its k: every file is searched
		preq.Limit = req.GetLimit()
	}
	if preq.MaxRowIDs == 0 {
		preq.MaxRowIDs = s.Config.Limits.MaxRowIds
	}
	if side := s.newSideIndexSource(tbl.Meta.TableUUID().String(), tbl.Meta.Properties(), schema, req, e); side != nil {
		// A renamed table is found again by index maintenance.
		s.rememberTable(ctx, side.tableUUID, name)
		if len(side.specs) > 0 {
			preq.SideIndex = side
		}
		if len(side.pageSpecs) > 0 {
			preq.SidePages = side
		}
	}
	resp, filePlans, err := s.Planner.Plan(ctx, preq)
	if err != nil {
		return nil, err
	}
	if req.GetVectorQuery() != nil {
		if resp, err = s.planVectors(ctx, req, tbl.Meta.TableUUID().String(), tbl.Meta.Properties(), &preq, resp, filePlans); err != nil {
			return nil, err
		}
	}
	ownFiles(resp.GetFiles())
	s.placeReads(ctx, resp.GetFiles())
	resp.SnapshotId = snapID
	resp.SchemaId = int32(schema.ID)
	resp.MetadataLocation = tbl.MetadataLocation
	resp.Stats.TrustMode = trust
	return resp, nil
}

// Authenticate establishes a call's caller from its metadata and request
// (nil without a Guard: in-process services in tests and benchmarks); the
// gRPC server's interceptor calls it before the handler
// (grpcutil.Admission.Caller).
func (s *Service) Authenticate(ctx context.Context, method string, req proto.Message) (any, error) {
	if s.Guard == nil {
		return nil, nil
	}
	return s.Guard.Authenticate(ctx, method, req)
}

// callerOf is the caller Authenticate established for the call of ctx
// (nil: a service without a Guard); a call none was established for is
// refused.
func (s *Service) callerOf(ctx context.Context, method string) (*access.Caller, error) {
	v, ok := grpcutil.CallerOf(ctx)
	if !ok {
		return nil, grpcutil.NoCaller(method)
	}
	caller, _ := v.(*access.Caller)
	if caller == nil && s.Guard != nil {
		return nil, grpcutil.NoCaller(method)
	}
	return caller, nil
}

// authorizeFiles checks the caller may read every data and delete file of
// the plan, each inside a table bucket.
func (s *Service) authorizeFiles(ctx context.Context, caller *access.Caller, files []plan.DataFile, applied map[string][]deletes.File) error {
	if caller == nil {
		return nil
	}
	checked := map[string]bool{}
	check := func(loc string) error {
		if checked[loc] {
			return nil
		}
		checked[loc] = true
		if _, err := caller.MayRead(ctx, loc); err != nil {
			if perr.KindOf(err) == perr.PermissionDenied {
				return perr.New(perr.PermissionDenied, "%w, so it may not plan over it", err)
			}
			return err
		}
		return nil
	}
	for i := range files {
		if err := check(files[i].Path); err != nil {
			return err
		}
		for _, d := range applied[files[i].Path] {
			if err := check(d.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// Length limits of the request's strings, checked before anything else.
const (
	MaxTableNameBytes  = 1024
	MaxWarehouseBytes  = 255
	MaxColumnPathBytes = 4096
)

// checkShape enforces the request-shape limits before any work.
func checkShape(req *pushdown_pb.ParquetPushdownRequest, lim Limits) error {
	switch {
	case req.GetTable() == "":
		return perr.New(perr.InvalidArgument, "Plan: table is empty (want namespace.table)")
	case len(req.GetTable()) > MaxTableNameBytes:
		return perr.New(perr.InvalidArgument, "Plan: table name of %d bytes exceeds the limit of %d", len(req.GetTable()), MaxTableNameBytes)
	case len(req.GetWarehouse()) > MaxWarehouseBytes:
		return perr.New(perr.InvalidArgument, "Plan: warehouse name of %d bytes exceeds the limit of %d", len(req.GetWarehouse()), MaxWarehouseBytes)
	case len(req.GetPredicate()) > lim.MaxPredicateBytes:
		return perr.New(perr.ResourceExhausted, "Plan: predicate of %d bytes exceeds the limit of %d", len(req.GetPredicate()), lim.MaxPredicateBytes)
	case len(req.GetColumns()) > lim.MaxColumns:
		return perr.New(perr.ResourceExhausted, "Plan: %d columns exceed the limit of %d", len(req.GetColumns()), lim.MaxColumns)
	case len(req.GetDataFiles()) > lim.MaxDataFiles:
		return perr.New(perr.ResourceExhausted, "Plan: %d data files exceed the limit of %d", len(req.GetDataFiles()), lim.MaxDataFiles)
	case req.GetLimit() < 0 || req.GetMaxRowIds() < 0:
		return perr.New(perr.InvalidArgument, "Plan: limit and max_row_ids must not be negative")
	case req.GetMaxRowIds() > lim.MaxRowIds:
		return perr.New(perr.ResourceExhausted, "Plan: max_row_ids %d exceeds the limit of %d", req.GetMaxRowIds(), lim.MaxRowIds)
	case req.GetVectorQuery() != nil && len(req.GetVectorQuery().GetVector()) > lim.MaxVectorLength:
		return perr.New(perr.ResourceExhausted, "Plan: query vector of %d dimensions exceeds the limit of %d", len(req.GetVectorQuery().GetVector()), lim.MaxVectorLength)
	}
	for i, c := range req.GetColumns() {
		if len(c.GetPath()) > MaxColumnPathBytes {
			return perr.New(perr.InvalidArgument, "Plan: columns[%d]: path of %d bytes exceeds the limit of %d", i, len(c.GetPath()), MaxColumnPathBytes)
		}
	}
	refs := 0
	for i, d := range req.GetDataFiles() {
		refs += len(d.GetDeletes())
		if len(d.GetPath()) > access.MaxPathBytes {
			return perr.New(perr.InvalidArgument, "Plan: data_files[%d]: path of %d bytes exceeds the limit of %d", i, len(d.GetPath()), access.MaxPathBytes)
		}
		for j, x := range d.GetDeletes() {
			if len(x.GetPath()) > access.MaxPathBytes || len(x.GetReferencedDataFile()) > access.MaxPathBytes {
				return perr.New(perr.InvalidArgument, "Plan: data_files[%d].deletes[%d]: path of %d bytes exceeds the limit of %d", i, j, max(len(x.GetPath()), len(x.GetReferencedDataFile())), access.MaxPathBytes)
			}
		}
	}
	if refs > lim.MaxDeleteRefs {
		return perr.New(perr.ResourceExhausted, "Plan: %d delete file references exceed the limit of %d", refs, lim.MaxDeleteRefs)
	}
	return checkVectorShape(req.GetVectorQuery(), lim)
}

func optional[T any](p *T) *T { return p }

// decodePredicate decodes and binds the request's predicate.
// decodePredicate decodes and binds the request's predicate, once per
// schema for the same bytes (s.predicates).
func (s *Service) decodePredicate(req *pushdown_pb.ParquetPushdownRequest, schema *iceberg.Schema) (predicate.Expr, error) {
	e, err := s.predicates.Decode(req.GetPredicateKind(), req.GetPredicate(), schema, s.Config.Limits.Predicate)
	return e, planPredicateError(err)
}

// planPredicateError names Plan in a refusal of the predicate that does
// not say it is about the predicate.
func planPredicateError(err error) error {
	if err != nil && perr.KindOf(err) == perr.InvalidArgument && !strings.HasPrefix(err.Error(), "predicate:") {
		return perr.New(perr.InvalidArgument, "Plan: %w", err)
	}
	return err
}

// resolveColumns maps the projection to field ids: by id when set (which
// must exist), else by the dotted path hint.
func resolveColumns(cols []*pushdown_pb.ColumnRef, schema *iceberg.Schema) ([]int, error) {
	var out []int
	for i, c := range cols {
		if c.GetFieldId() != 0 {
			if _, ok := schema.FindFieldByID(int(c.GetFieldId())); !ok {
				return nil, perr.New(perr.InvalidArgument, "columns[%d]: field id %d is not in schema %d", i, c.GetFieldId(), schema.ID)
			}
			out = append(out, int(c.GetFieldId()))
			continue
		}
		if c.GetPath() == "" {
			return nil, perr.New(perr.InvalidArgument, "columns[%d]: neither field_id nor path is set", i)
		}
		f, ok := schema.FindFieldByName(c.GetPath())
		if !ok {
			return nil, perr.New(perr.InvalidArgument, "columns[%d]: no field %s in schema %d", i, perr.Quote(c.GetPath()), schema.ID)
		}
		out = append(out, f.ID)
	}
	return out, nil
}

// ownFiles replaces the response's PlannedFiles by copies of its own: the
// planner memoizes a file's PlannedFile and shares it with every response
// naming the file, and the catalog then sets what differs from plan to
// plan (the read endpoint; the nested lists of nest_by_file) — on a shared
// message that was a write racing the marshalling of other responses. The
// descriptor is shared (never modified).
func ownFiles(files []*pushdown_pb.PlannedFile) {
	own := make([]pushdown_pb.PlannedFile, len(files))
	for i, pf := range files {
		o := &own[i]
		o.File, o.SizeBytes, o.RecordCount = pf.File, pf.SizeBytes, pf.RecordCount
		o.FooterOffset, o.FooterLength = pf.FooterOffset, pf.FooterLength
		o.RowGroupsTotal, o.RowGroupsPlanned, o.HasPageIndex = pf.RowGroupsTotal, pf.RowGroupsPlanned, pf.HasPageIndex
		o.Descriptor_, o.Identity, o.ReadEndpoint = pf.Descriptor_, pf.Identity, pf.ReadEndpoint
		o.RowGroups, o.Pages, o.Ranges = pf.RowGroups, pf.Pages, pf.Ranges
		files[i] = o
	}
}
