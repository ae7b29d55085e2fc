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
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// MaxVectorK bounds the LIMIT of a vector query.
const MaxVectorK = connector.MaxVectorK

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
func Run(ctx context.Context, conn *connector.Connector, st *Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.sel != nil && st.Params > 0 && st.Table == "" {
		return nil, perr.New(perr.InvalidArgument, "SQL: the statement takes %d parameters; bind them first", st.Params)
	}
	schema, err := tableSchema(ctx, conn, st.Table, o.Snapshot)
	if err != nil {
		return nil, err
	}
	st, err = st.canonical(schema)
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

// canonical is st with every column spelled as the schema spells it.
func (st *Statement) canonical(schema *iceberg.Schema) (*Statement, error) {
	c := *st
	resolve := func(name string) (string, error) {
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
	}
	c.Items = make([]Item, len(st.Items))
	for i, it := range st.Items {
		var err error
		if it.Agg == nil {
			if it.Column, err = resolve(it.Column); err != nil {
				return nil, err
			}
		} else if it.Agg.Column != "" {
			a := *it.Agg
			if a.Column, err = resolve(a.Column); err != nil {
				return nil, err
			}
			it.Agg = &a
		}
		c.Items[i] = it
	}
	c.GroupBy = make([]string, len(st.GroupBy))
	for i, g := range st.GroupBy {
		var err error
		if c.GroupBy[i], err = resolve(g); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

func (st *Statement) query(o Options) connector.Query {
	q := connector.Query{Table: st.Table, Snapshot: o.Snapshot, Where: st.Where, Clause: st.where}
	if st.Vector != nil {
		q.Vector = &connector.VectorQuery{Column: st.Vector.Column, Metric: vector.Metric(st.Vector.Metric), Vector: st.Vector.Vector, Nprobe: o.Nprobe}
	}
	return q
}

// readColumns are the distinct table columns of items (and extra), in
// first-use order.
func readColumns(items []Item, extra []string) []string {
	var out []string
	add := func(c string) {
		if c != "" && !contains(out, c) {
			out = append(out, c)
		}
	}
	for _, g := range extra {
		add(g)
	}
	for _, it := range items {
		if it.Agg != nil {
			add(it.Agg.Column)
		} else {
			add(it.Column)
		}
	}
	return out
}

// layout rebuilds rec (columns in read order) in item order, named by
// the items; hidden items only when withHidden.
func layout(rec arrow.RecordBatch, items []Item, columns []string, withHidden bool) arrow.RecordBatch {
	var fields []arrow.Field
	var cols []arrow.Array
	for _, it := range items {
		if it.Hidden && !withHidden {
			continue
		}
		at := readColumn(columns, it.Column)
		f := rec.Schema().Field(at)
		f.Name = it.Name
		fields = append(fields, f)
		cols = append(cols, rec.Column(at))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// runPlain streams a SELECT of columns: LIMIT and OFFSET are the
// connector's.
func runPlain(ctx context.Context, conn *connector.Connector, st *Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	q := st.query(o)
	var columns []string
	if !st.Star {
		columns = readColumns(st.Items, nil)
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
		out := layout(rec, st.Items, columns, false)
		defer out.Release()
		return sink(out)
	})
	if err != nil {
		return nil, err
	}
	out := &Result{Schema: res.Schema, Stats: Stats{Stats: res.Stats, RowsRead: res.Stats.Rows, AnsweredBy: "scan"}}
	if !st.Star && res.Schema != nil && res.Schema.NumFields() >= len(columns) {
		empty := emptyRecord(res.Schema)
		shaped := layout(empty, st.Items, columns, false)
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
func runSorted(ctx context.Context, conn *connector.Connector, st *Statement, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.Vector != nil {
		return nil, unsupported("ORDER BY columns with a vector distance")
	}
	q := st.query(o)
	columns := readColumns(st.Items, nil)
	q.Select = columns
	s := newSorter(st.Orders, st)
	defer s.release()
	res, err := conn.Stream(ctx, q, func(rec arrow.RecordBatch) error {
		shaped := layout(rec, st.Items, columns, true)
		defer shaped.Release()
		return s.add(ctx, shaped)
	})
	if err != nil {
		return nil, err
	}
	out := &Result{Stats: Stats{Stats: res.Stats, RowsRead: res.Stats.Rows, AnsweredBy: "scan"}}
	if len(s.recs) == 0 {
		empty := emptyRecord(res.Schema)
		defer empty.Release()
		shaped := layout(empty, st.Items, columns, true)
		s.recs = append(s.recs, shaped)
	}
	sorted, err := s.sorted(ctx)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	return emit(st, sorted, out, sink)
}

// emit hands on rows OFFSET … LIMIT of rec without its hidden items.
func emit(st *Statement, rec arrow.RecordBatch, out *Result, sink func(arrow.RecordBatch) error) (*Result, error) {
	start, end := min(st.Offset, rec.NumRows()), rec.NumRows()
	if st.HasLimit {
		end = min(end, start+st.Limit)
	}
	cut := rec.NewSlice(start, end)
	defer cut.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for i, it := range st.Items {
		if !it.Hidden {
			fields = append(fields, cut.Schema().Field(i))
			cols = append(cols, cut.Column(i))
		}
	}
	final := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, cut.NumRows())
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
func runAggregate(ctx context.Context, conn *connector.Connector, st *Statement, schema *iceberg.Schema, o Options, sink func(arrow.RecordBatch) error) (*Result, error) {
	if st.Vector != nil {
		return nil, unsupported("aggregates with ORDER BY a vector distance")
	}
	columns := readColumns(st.Items, st.GroupBy)
	countOnly := countsRowsOnly(st, schema)
	if countOnly {
		// every item is a row count: COUNT(*)
		rows := *st
		rows.Items = make([]Item, len(st.Items))
		for i, it := range st.Items {
			it.Agg = &Agg{Func: Count}
			rows.Items[i] = it
		}
		st = &rows
		where, err := st.whereClause()
		if err != nil {
			return nil, err
		}
		c, err := countColumn(schema, where)
		if err != nil {
			return nil, err
		}
		columns = []string{c}
	}
	a := newAggregator(st, columns)
	out := &Result{Stats: Stats{AnsweredBy: "scan"}}
	var readSchema *arrow.Schema
	answered := false
	if countOnly && !o.NoMetadataAnswers {
		n, pst, note, err := planCount(ctx, conn, st, columns[0], o)
		if err != nil {
			return nil, err
		}
		if note == "" {
			answered = true
			out.Stats.Stats = pst
			out.Stats.AnsweredBy = "plan"
			g := a.newGroup(nil, nil)
			for i := range g.accs {
				g.accs[i].n = n
			}
			readSchema, err = arrowSchemaOf(schema, columns)
			if err != nil {
				return nil, err
			}
		}
		out.Stats.CountNote = note
	}
	if !answered && o.AggregateAt != connector.AggregateHere {
		var err error
		if answered, readSchema, err = volumeAggregate(ctx, conn, st, schema, columns, a, o, out, countOnly); err != nil {
			return nil, err
		}
	}
	if !answered {
		q := st.query(o)
		q.Select = columns
		var counted *arrow.Schema
		if countOnly {
			// rows counted, no column projected: the read hands on row counts
			var err error
			if counted, err = arrowSchemaOf(schema, columns); err != nil {
				return nil, err
			}
			if err := a.init(counted); err != nil {
				return nil, err
			}
			q.CountOnly = true
		}
		res, err := conn.Stream(ctx, q, func(rec arrow.RecordBatch) error { return a.add(rec) })
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
func finishAggregate(ctx context.Context, st *Statement, a *aggregator, readSchema *arrow.Schema, out *Result, sink func(arrow.RecordBatch) error) (*Result, error) {
	rec, err := a.finish(readSchema, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	out.Stats.Groups = int64(len(a.groups))
	sorted, err := sortRecord(ctx, rec, st.Orders)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
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
func (st *Statement) ConnectorQuery(o Options) connector.Query {
	q := st.query(o)
	if !st.Star {
		q.Select = readColumns(st.Items, st.GroupBy)
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
func countsRowsOnly(st *Statement, schema *iceberg.Schema) bool {
	if len(st.GroupBy) > 0 {
		return false
	}
	for _, it := range st.Items {
		if it.Agg == nil || it.Agg.Func != Count || it.Agg.Distinct {
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
func volumeAggregate(ctx context.Context, conn *connector.Connector, st *Statement, schema *iceberg.Schema, columns []string, a *aggregator,
	o Options, out *Result, countOnly bool) (answered bool, readSchema *arrow.Schema, err error) {
	aggs, ok := PartialAggs(st)
	if !ok {
		out.Stats.AggregateNote = "COUNT(DISTINCT) has no partial state"
		return false, nil, nil
	}
	if readSchema, err = arrowSchemaOf(schema, columns); err != nil {
		return false, nil, err
	}
	if err := a.init(readSchema); err != nil {
		return false, nil, err
	}
	q := st.query(o)
	q.Select = columns
	q.CountOnly = countOnly // files read here hand on row counts only
	aq := connector.AggregateQuery{Query: q, GroupBy: st.GroupBy, MaxGroups: MaxGroups, Site: o.AggregateAt}
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
	res, err := conn.AggregateOnVolumes(ctx, aq, a.addPartials, a.add)
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

var partialFuncs = map[Func]pushdown_pb.AggregateFunc{
	Count: pushdown_pb.AggregateFunc_AGGREGATE_COUNT,
	Sum:   pushdown_pb.AggregateFunc_AGGREGATE_SUM,
	Min:   pushdown_pb.AggregateFunc_AGGREGATE_MIN,
	Max:   pushdown_pb.AggregateFunc_AGGREGATE_MAX,
	Avg:   pushdown_pb.AggregateFunc_AGGREGATE_AVG,
}
