// Package sqlexec is the one SQL front end of lakeweed: `weed pushdown
// query` and the Flight SQL endpoint both run a SELECT (parsed by sqlstmt)
// here, over the connector's streamed Arrow records.
//
//	sqlstmt.Statement ─▶ WHERE (parsed once: its sqlpred.Clause), the columns read
//	   │                  ─▶ connector.Stream (pushdown: pages, ReadRows, volume scans, vectors)
//	   │  records ─▶ plain SELECT: sqlstmt.Layout, streamed through (LIMIT/OFFSET in the connector)
//	   │          ─▶ ORDER BY columns: sqlstmt.Sorter ─▶ Cut
//	   │          ─▶ GROUP BY / aggregates: sqlstmt.Aggregator (here), or the volumes'
//	   │             partial states merged (connector.AggregateOnVolumes) ─▶ Finish ─▶ Cut
//	   ▼
//	COUNT(*) alone: answered from the plan (row counts − deleted positions), reading no data (count.go)
package sqlexec

import (
	"context"
	"errors"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// Options tune one execution.
type Options struct {
	Snapshot int64 // 0: current
	Nprobe   int   // vector queries: IVF lists probed per file at least
	// NoMetadataAnswers: COUNT(*) is always counted from the rows read,
	// never from the plan's row counts (for comparison).
	NoMetadataAnswers bool
	// AggregateAt is where a GROUP BY's aggregates are computed when
	// every one has a partial state (not COUNT(DISTINCT)): auto and volume
	// on the volume servers holding the files, merged here (files they
	// cannot aggregate read here); here reads every row (-aggregateAt).
	AggregateAt connector.AggregateSite
}

// Stats describe how a statement was answered: the read's figures, the
// answer's rows, and how aggregates were computed.
type Stats struct {
	connector.Stats
	// RowsRead: rows the read handed to the aggregation or sort.
	RowsRead int64 `json:"rows_read"`
	// AnsweredBy: "scan" (rows read and computed here), "plan" (COUNT(*)
	// from the plan's row counts minus deleted positions: no data read) or
	// "volume partial aggregates" (groups computed by the volume servers
	// next to the data and merged here: Stats.AggregateVolumeFiles, the
	// files read here instead in AggregateHereFiles).
	AnsweredBy string `json:"answered_by,omitempty"`
	Groups     int64  `json:"groups,omitempty"`
	// CountNote says why a COUNT(*) could not be answered from the plan.
	CountNote string `json:"count_note,omitempty"`
	// AggregateNote says why the volumes were not asked for partial
	// aggregates.
	AggregateNote string `json:"aggregate_note,omitempty"`
}

// Result is a statement's answer schema and figures (records went to the
// sink).
type Result struct {
	Schema *arrow.Schema
	Stats  Stats
}

// Run answers st, handing its records to sink in order.
func Run(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.Params > 0 && st.Table == "" {
		return nil, perr.New(perr.InvalidArgument, "SQL: the statement takes %d parameters; bind them first", st.Params)
	}
	schema, err := tableSchema(ctx, conn, st.Table, o.Snapshot)
	if err != nil {
		return nil, err
	}
	st, err = canonical(st, schema)
	if err != nil {
		return nil, err
	}
	switch {
	case st.Aggregate:
		return runAggregate(ctx, conn, st, schema, o, sink)
	case len(st.Orders) > 0:
		return runSorted(ctx, conn, st, o, sink)
	}
	return runPlain(ctx, conn, st, o, sink)
}

// canonical is st with every column spelled as the schema spells it (a
// vector query's distance column as it is).
func canonical(st *sqlstmt.Statement, schema *iceberg.Schema) (*sqlstmt.Statement, error) {
	return st.Canonical(func(name string) (string, error) {
		if name == connector.DistanceColumn && st.Vector != nil {
			return name, nil
		}
		r, err := sqlpred.ResolveName(schema, name)
		if err != nil {
			return "", perr.New(perr.InvalidArgument, "SQL: %v", err)
		}
		if _, ok := schema.FindFieldByName(r); !ok {
			return "", perr.New(perr.InvalidArgument, "SQL: %v", sqlpred.UnknownColumn(name, schema))
		}
		return r, nil
	})
}

// query is the connector's read of st's rows (its WHERE as parsed with
// it), before columns, LIMIT and OFFSET are chosen.
func query(st *sqlstmt.Statement, o Options) connector.Query {
	q := connector.Query{Table: st.Table, Snapshot: o.Snapshot, Where: st.Where}
	if c, err := st.WhereClause(); err == nil {
		q.Clause = c // else the connector parses Where and says what is wrong
	}
	if st.Vector != nil {
		q.Vector = &connector.VectorQuery{Column: st.Vector.Column, Metric: vector.Metric(st.Vector.Metric), Vector: st.Vector.Vector, Nprobe: o.Nprobe}
	}
	return q
}

// runPlain streams a SELECT of columns: LIMIT and OFFSET are the
// connector's.
func runPlain(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	q := query(st, o)
	var columns []string
	if !st.Star {
		columns = sqlstmt.ReadColumns(st.Items, nil)
		q.Select = columns
	}
	q.Limit, q.Offset = st.Limit, st.Offset
	noRows := st.HasLimit && st.Limit == 0
	if noRows {
		q.Limit, q.Offset = 1, 0 // the columns of an answer without rows
	}
	var rows int64
	res, err := conn.Stream(ctx, q, func(rec arrow.RecordBatch) error {
		if noRows {
			return nil
		}
		rows += rec.NumRows()
		if st.Star {
			return sink(rec)
		}
		out := sqlstmt.Layout(rec, st.Items, columns, false)
		defer out.Release()
		return sink(out)
	})
	if err != nil {
		return nil, err
	}
	out := &Result{Schema: res.Schema, Stats: Stats{Stats: res.Stats, RowsRead: res.Stats.Rows, AnsweredBy: "scan"}}
	if !st.Star && res.Schema != nil && res.Schema.NumFields() >= len(columns) {
		empty := emptyRecord(res.Schema)
		shaped := sqlstmt.Layout(empty, st.Items, columns, false)
		out.Schema = shaped.Schema()
		shaped.Release()
		empty.Release()
	}
	out.Stats.Rows = rows
	return out, nil
}

func emptyRecord(sch *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, sch.NumFields())
	for i, f := range sch.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
		defer cols[i].Release()
	}
	return array.NewRecordBatch(sch, cols, 0)
}

// runSorted reads every matching row's columns, sorts them and hands on
// OFFSET … LIMIT.
func runSorted(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.Vector != nil {
		return nil, sqlstmt.Unsupported("ORDER BY columns with a vector distance")
	}
	q := query(st, o)
	columns := sqlstmt.ReadColumns(st.Items, nil)
	q.Select = columns
	s := sqlstmt.NewSorter(st.Orders, st)
	defer s.Release()
	res, err := conn.Stream(ctx, q, func(rec arrow.RecordBatch) error {
		shaped := sqlstmt.Layout(rec, st.Items, columns, true)
		defer shaped.Release()
		return s.Add(ctx, shaped)
	})
	if err != nil {
		return nil, err
	}
	out := &Result{Stats: Stats{Stats: res.Stats, RowsRead: res.Stats.Rows, AnsweredBy: "scan"}}
	if s.Len() == 0 {
		empty := emptyRecord(res.Schema)
		defer empty.Release()
		shaped := sqlstmt.Layout(empty, st.Items, columns, true)
		defer shaped.Release()
		if err := s.Add(ctx, shaped); err != nil {
			return nil, err
		}
	}
	sorted, err := s.Sorted(ctx)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	return emit(st, sorted, out, sink)
}

// emit hands on rows OFFSET … LIMIT of rec without its hidden items.
func emit(st *sqlstmt.Statement, rec arrow.RecordBatch, out *Result, sink func(arrow.RecordBatch) error) (*Result, error) {
	final := st.Cut(rec)
	defer final.Release()
	out.Schema = final.Schema()
	out.Stats.Rows = final.NumRows()
	if final.NumRows() > 0 {
		if err := sink(final); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runAggregate groups and aggregates the matching rows (or, for COUNT(*)
// alone, counts them from the plan), then HAVING, ORDER BY, OFFSET, LIMIT.
func runAggregate(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, schema *iceberg.Schema, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.Vector != nil {
		return nil, sqlstmt.Unsupported("aggregates with ORDER BY a vector distance")
	}
	columns := sqlstmt.ReadColumns(st.Items, st.GroupBy)
	countOnly := countsRowsOnly(st, schema)
	if countOnly {
		// every item is a row count: COUNT(*)
		rows := *st
		rows.Items = make([]sqlstmt.Item, len(st.Items))
		for i, it := range st.Items {
			it.Agg = &sqlstmt.Agg{Func: sqlstmt.Count}
			rows.Items[i] = it
		}
		st = &rows
		where, err := st.WhereClause()
		if err != nil {
			return nil, err
		}
		c, err := countColumn(schema, where)
		if err != nil {
			return nil, err
		}
		columns = []string{c}
	}
	a := sqlstmt.NewAggregator(st, columns)
	out := &Result{Stats: Stats{AnsweredBy: "scan"}}
	var readSchema *arrow.Schema
	answered := false
	var countPlan *pushdown_pb.ParquetPushdownResponse // the plan a count could not answer from
	if countOnly && !o.NoMetadataAnswers {
		n, pst, note, resp, err := planCount(ctx, conn, st, columns[0], o)
		if err != nil {
			return nil, err
		}
		if note == "" {
			answered = true
			out.Stats.Stats = pst
			out.Stats.AnsweredBy = "plan"
			a.SetRowCount(n)
			readSchema, err = arrowSchemaOf(schema, columns)
			if err != nil {
				return nil, err
			}
		}
		out.Stats.CountNote = note
		countPlan = resp
	}
	if !answered && o.AggregateAt != connector.AggregateHere {
		var err error
		if answered, readSchema, err = volumeAggregate(ctx, conn, st, schema, columns, a, o, out, countOnly, countPlan); err != nil {
			return nil, err
		}
	}
	if !answered {
		q := query(st, o)
		q.Select = columns
		var counted *arrow.Schema
		if countOnly {
			// rows counted, no column projected: the read hands on row counts
			var err error
			if counted, err = arrowSchemaOf(schema, columns); err != nil {
				return nil, err
			}
			if err := a.Init(counted); err != nil {
				return nil, err
			}
			q.CountOnly = true
		}
		res, err := conn.Stream(ctx, q, func(rec arrow.RecordBatch) error { return a.Add(rec) })
		if err != nil {
			return nil, err
		}
		out.Stats.Stats, out.Stats.RowsRead, readSchema = res.Stats, res.Stats.Rows, res.Schema
		if counted != nil {
			readSchema = counted
		}
	}
	if readSchema == nil || readSchema.NumFields() < len(columns) {
		return nil, errors.New("the read returned no schema for its columns")
	}
	return finishAggregate(ctx, st, a, readSchema, out, sink)
}

// finishAggregate hands on the groups a holds: HAVING, ORDER BY, OFFSET,
// LIMIT.
func finishAggregate(ctx context.Context, st *sqlstmt.Statement, a *sqlstmt.Aggregator, readSchema *arrow.Schema, out *Result, sink func(arrow.RecordBatch) error) (*Result, error) {
	sorted, err := a.Finish(ctx, readSchema)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	out.Stats.Groups = int64(a.Groups())
	return emit(st, sorted, out, sink)
}

// countColumn is the column read to count rows when none is named: one
// of the WHERE's columns (read anyway), else the table's first column of
// a fixed-width type, else its first column.
func countColumn(schema *iceberg.Schema, where *sqlpred.Clause) (string, error) {
	if !where.Empty() {
		e, err := where.For(schema)
		if err != nil {
			return "", err
		}
		if b, err := iceberg.BindExpr(schema, e, true); err == nil {
			for _, id := range referenced(b) {
				if n, ok := schema.FindColumnName(id); ok {
					if f, ok := schema.FindFieldByID(id); ok {
						if _, prim := f.Type.(iceberg.PrimitiveType); prim {
							return n, nil
						}
					}
				}
			}
		}
	}
	fields := schema.Fields()
	for _, f := range fields {
		switch f.Type.(type) {
		case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.BooleanType, iceberg.TimestampType, iceberg.TimestampTzType,
			iceberg.Float32Type, iceberg.Float64Type:
			return f.Name, nil
		}
	}
	if len(fields) == 0 {
		return "", errors.New("the table has no columns")
	}
	return fields[0].Name, nil
}

// referenced lists the field ids a bound predicate's leaves name.
func referenced(e iceberg.BooleanExpression) []int {
	ids, err := iceberg.VisitExpr(e, &fieldIDs{})
	if err != nil {
		return nil
	}
	return ids
}

type fieldIDs struct{}

func (fieldIDs) VisitTrue() []int                            { return nil }
func (fieldIDs) VisitFalse() []int                           { return nil }
func (fieldIDs) VisitNot(c []int) []int                      { return c }
func (fieldIDs) VisitAnd(l, r []int) []int                   { return append(l, r...) }
func (fieldIDs) VisitOr(l, r []int) []int                    { return append(l, r...) }
func (fieldIDs) VisitUnbound(iceberg.UnboundPredicate) []int { return nil }
func (fieldIDs) VisitBound(p iceberg.BoundPredicate) []int {
	return []int{p.Term().Ref().Field().ID}
}

// arrowSchemaOf is the Arrow schema of columns of schema (as the
// connector reads them).
func arrowSchemaOf(schema *iceberg.Schema, columns []string) (*arrow.Schema, error) {
	var fields []iceberg.NestedField
	for _, c := range columns {
		f, ok := schema.FindFieldByName(c)
		if !ok {
			return nil, sqlpred.UnknownColumn(c, schema)
		}
		fields = append(fields, f)
	}
	return table.SchemaToArrowSchema(iceberg.NewSchema(schema.ID, fields...), nil, true, false)
}

// ConnectorQuery is the read st makes (for an explanation of its plan).
func ConnectorQuery(st *sqlstmt.Statement, o Options) connector.Query {
	q := query(st, o)
	if !st.Star {
		q.Select = sqlstmt.ReadColumns(st.Items, st.GroupBy)
	}
	if !st.Aggregate && len(st.Orders) == 0 {
		q.Limit, q.Offset = st.Limit, st.Offset
	}
	return q
}

// tableSchema is the table's schema; a table the catalog does not show the
// caller (missing, or one its identity may not see: the Iceberg catalog
// answers both alike) is NOT_FOUND.
func tableSchema(ctx context.Context, conn *connector.Connector, name string, snapshot int64) (*iceberg.Schema, error) {
	schema, err := conn.TableSchema(ctx, name, snapshot)
	if err != nil && (strings.Contains(err.Error(), "NoSuchTableException") || strings.Contains(err.Error(), "NoSuchNamespaceException")) {
		return nil, perr.Wrap(perr.NotFound, err)
	}
	return schema, err
}

// countsRowsOnly: every item counts rows — COUNT(*), or COUNT of a
// required column (never NULL) — with no GROUP BY, so the answer is the
// number of matching rows.
func countsRowsOnly(st *sqlstmt.Statement, schema *iceberg.Schema) bool {
	if len(st.GroupBy) > 0 {
		return false
	}
	for _, it := range st.Items {
		if it.Agg == nil || it.Agg.Func != sqlstmt.Count || it.Agg.Distinct {
			return false
		}
		if it.Agg.Column != "" {
			f, ok := schema.FindFieldByName(it.Agg.Column)
			if !ok || !f.Required {
				return false
			}
		}
	}
	return true
}

// volumeAggregate asks the volume servers for st's aggregates as partial
// states and merges them into a (files they cannot aggregate are read and
// added to a). answered false: nothing was added, read instead (the reason
// in Stats.AggregateNote).
func volumeAggregate(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, schema *iceberg.Schema, columns []string, a *sqlstmt.Aggregator,
	o Options, out *Result, countOnly bool, plan *pushdown_pb.ParquetPushdownResponse) (answered bool, readSchema *arrow.Schema, err error) {
	aggs, ok := sqlstmt.PartialAggs(st)
	if !ok {
		out.Stats.AggregateNote = "COUNT(DISTINCT) has no partial state"
		return false, nil, nil
	}
	if readSchema, err = arrowSchemaOf(schema, columns); err != nil {
		return false, nil, err
	}
	if err := a.Init(readSchema); err != nil {
		return false, nil, err
	}
	q := query(st, o)
	q.Select = columns
	q.CountOnly = countOnly // files read here hand on row counts only
	aq := connector.AggregateQuery{Query: q, GroupBy: st.GroupBy, MaxGroups: sqlstmt.MaxGroups, Site: o.AggregateAt, Plan: plan}
	p := 0
	for _, it := range st.Items {
		if it.Agg == nil {
			continue
		}
		call := connector.AggregateCall{Func: partialFuncs[aggs[p].Func], Column: it.Agg.Column}
		if it.Agg.Column == "" {
			call.Func = pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS
		}
		aq.Aggregates = append(aq.Aggregates, call)
		p++
	}
	res, err := conn.AggregateOnVolumes(ctx, aq, a.AddPartials, a.Add)
	var na *connector.NotAggregatedError
	if errors.As(err, &na) {
		out.Stats.AggregateNote = na.Reason
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	out.Stats.Stats, out.Stats.RowsRead = res.Stats, res.Stats.Rows
	switch {
	case res.Stats.AggregateVolumeFiles > 0:
		out.Stats.AnsweredBy = "volume partial aggregates"
	case res.Stats.AggregateHereFiles == 0:
		out.Stats.AnsweredBy = "plan" // it pruned every file
	}
	return true, readSchema, nil
}

var partialFuncs = map[sqlstmt.Func]pushdown_pb.AggregateFunc{
	sqlstmt.Count: pushdown_pb.AggregateFunc_AGGREGATE_COUNT,
	sqlstmt.Sum:   pushdown_pb.AggregateFunc_AGGREGATE_SUM,
	sqlstmt.Min:   pushdown_pb.AggregateFunc_AGGREGATE_MIN,
	sqlstmt.Max:   pushdown_pb.AggregateFunc_AGGREGATE_MAX,
	sqlstmt.Avg:   pushdown_pb.AggregateFunc_AGGREGATE_AVG,
}
