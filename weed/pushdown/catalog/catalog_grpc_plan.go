package catalog

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Plan answers what a connector must read for a query over a table.
func (s *Service) Plan(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	lim := s.Config.Limits
	switch {
	case req.GetTable() == "":
		return nil, perr.New(perr.InvalidArgument, "Plan: table is empty (want namespace.table)")
	case len(req.GetPredicate()) > lim.MaxPredicateBytes:
		return nil, perr.New(perr.ResourceExhausted, "Plan: predicate of %d bytes exceeds the limit of %d", len(req.GetPredicate()), lim.MaxPredicateBytes)
	case len(req.GetColumns()) > lim.MaxColumns:
		return nil, perr.New(perr.ResourceExhausted, "Plan: %d columns exceed the limit of %d", len(req.GetColumns()), lim.MaxColumns)
	case len(req.GetDataFiles()) > lim.MaxDataFiles:
		return nil, perr.New(perr.ResourceExhausted, "Plan: %d data files exceed the limit of %d", len(req.GetDataFiles()), lim.MaxDataFiles)
	case len(req.GetDataFiles()) > 0:
		return nil, perr.New(perr.Unimplemented, "Plan: client-supplied data files need a trust mode (connector-trusted or catalog-validated), not built yet; send no data_files and the catalog resolves the snapshot")
	case req.GetVectorQuery() != nil:
		return nil, perr.New(perr.Unimplemented, "Plan: vector queries are not built yet")
	case req.GetRequestRowIds():
		return nil, perr.New(perr.Unimplemented, "Plan: row ids are not built yet (they come with side indexes and vector search)")
	case req.GetLimit() < 0 || req.GetMaxRowIds() < 0:
		return nil, perr.New(perr.InvalidArgument, "Plan: limit and max_row_ids must not be negative")
	}

	tbl, err := s.Tables.Load(ctx, req.GetWarehouse(), req.GetTable())
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
	e, err := decodePredicate(req, schema, lim)
	if err != nil {
		return nil, err
	}
	projection, err := resolveColumns(req.GetColumns(), schema)
	if err != nil {
		return nil, err
	}
	files, err := s.Tables.DataFiles(ctx, tbl, snap)
	if err != nil {
		return nil, err
	}
	if len(files.Deletes) > 0 {
		return nil, perr.New(perr.FailedPrecondition,
			"table %s has %d delete files at snapshot %d; applying deletes is not built yet, so a plan would return deleted rows (read the table without pushdown)",
			req.GetTable(), len(files.Deletes), snap.SnapshotID)
	}
	specs := map[int]iceberg.PartitionSpec{}
	for _, sp := range tbl.Meta.PartitionSpecs() {
		specs[sp.ID()] = sp
	}
	resp, _, err := s.Planner.Plan(ctx, plan.Request{
		Table:      plan.Table{Schema: schema, Specs: specs, NameMapping: tbl.Meta.NameMapping()},
		Files:      files.Data,
		Predicate:  e,
		Projection: projection,
		Options:    s.Config.Plan,
	})
	if err != nil {
		return nil, err
	}
	if snap != nil {
		resp.SnapshotId = snap.SnapshotID
	}
	resp.SchemaId = int32(schema.ID)
	resp.Stats.TrustMode = s.TrustMode
	return resp, nil
}

func optional[T any](p *T) *T { return p }

// decodePredicate decodes and binds the request's predicate.
func decodePredicate(req *pushdown_pb.ParquetPushdownRequest, schema *iceberg.Schema, lim Limits) (predicate.Expr, error) {
	if len(req.GetPredicate()) == 0 {
		if req.GetPredicateKind() != pushdown_pb.PredicateKind_PREDICATE_UNSPECIFIED {
			return nil, perr.New(perr.InvalidArgument, "Plan: predicate_kind is %s but the predicate is empty", req.GetPredicateKind())
		}
		return predicate.Const{Value: true}, nil
	}
	var raw predicate.Expr
	var err error
	switch req.GetPredicateKind() {
	case pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT:
		raw, err = predicate.DecodeSubstrait(req.GetPredicate(), schema)
	case pushdown_pb.PredicateKind_PREDICATE_ICEBERG:
		raw, err = predicate.DecodeIcebergJSON(req.GetPredicate(), schema)
	default:
		return nil, perr.New(perr.InvalidArgument, "Plan: predicate_kind is %s; want PREDICATE_SUBSTRAIT or PREDICATE_ICEBERG", req.GetPredicateKind())
	}
	if err != nil {
		return nil, bindError(err)
	}
	e, err := predicate.Bind(raw, schema, lim.Predicate)
	if err != nil {
		return nil, bindError(err)
	}
	return e, nil
}

func bindError(err error) error {
	var be *predicate.BindError
	if errors.As(err, &be) {
		return perr.New(perr.InvalidArgument, "predicate: %s", be.Msg)
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
			return nil, perr.New(perr.InvalidArgument, "columns[%d]: no field %q in schema %d", i, c.GetPath(), schema.ID)
		}
		out = append(out, f.ID)
	}
	return out, nil
}
