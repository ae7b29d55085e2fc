package connector

// Aggregates next to the data: a GROUP BY whose aggregates all have
// partial states (COUNT, SUM, MIN, MAX, AVG) is planned as any query; each
// planned file is then sent to the volume pushdown service holding it
// (AggregateRows), which filters, groups and answers a row per group;
// the caller merges the partials. A file the volume cannot aggregate, or
// whose call fails (counted, the reason kept), is read here and its rows
// handed to the caller's own aggregation: a failure costs speed, never
// rows.
//
//	plan (catalog: files, row groups, exact answers, deletes)
//	   │ per file: -aggregateAt here ─▶ read;  volume ─▶ volume when it
//	   │ can (a route; the predicate evaluable there; the grouping and
//	   │ argument columns top-level, stored, typed as the table types them);
//	   │ auto ─▶ as volume, but a predicate to evaluate row by row on a
//	   │ holder on this host reads here (see fetch_scan.go's cost model)
//	   ├─ volume: AggregateRows(row groups, ranges, deletes, predicate,
//	   │          GROUP BY ids, aggregates) ─▶ partial states ─▶ partial sink
//	   └─ here:   readPlan of those files ─▶ rows sink

import (
	stdbytes "bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// AggregateSite is where the aggregates of a GROUP BY are computed
// (-aggregateAt).
type AggregateSite int

const (
	// AggregateAuto: on the volumes when they can and no predicate must
	// be evaluated row by row on a holder on this host.
	AggregateAuto AggregateSite = iota
	// AggregateHere: rows read and aggregated here.
	AggregateHere
	// AggregateVolume: on the volumes whenever they can.
	AggregateVolume
)

func (s AggregateSite) String() string {
	return [...]string{"auto", "here", "volume"}[s]
}

// ParseAggregateSite parses -aggregateAt.
func ParseAggregateSite(s string) (AggregateSite, error) {
	for _, a := range []AggregateSite{AggregateAuto, AggregateHere, AggregateVolume} {
		if s == a.String() {
			return a, nil
		}
	}
	return AggregateAuto, fmt.Errorf("aggregate site %q: want auto, here or volume", s)
}

// AggregateCall is one aggregate with a partial state.
type AggregateCall struct {
	Func   pushdown_pb.AggregateFunc
	Column string // "" for COUNT(*)
}

// AggregateQuery is a grouped aggregation: Query's table, snapshot and
// WHERE, its Select the columns files read here return (LIMIT, OFFSET
// and Vector are not used).
type AggregateQuery struct {
	Query
	GroupBy    []string
	Aggregates []AggregateCall
	MaxGroups  int64
	Site       AggregateSite
	// Plan, when set, is Explain's answer for Query (a COUNT(*) that could
	// not be counted from it): used instead of planning again when it was
	// made from the metadata version, snapshot and schema this call binds
	// to, else planned anew.
	Plan *pushdown_pb.ParquetPushdownResponse
}

// NotAggregatedError: the volumes were not asked (no plan, a truncated
// plan, pushdown off); nothing was handed to either sink, read instead.
type NotAggregatedError struct{ Reason string }

func (e *NotAggregatedError) Error() string {
	return "not aggregated on the volumes: " + e.Reason
}

// aggregateCounters are one query's figures of where files were
// aggregated.
type aggregateCounters struct {
	mu                                        sync.Mutex
	volume, here, fallbacks, bytes, groups    int64
	fromStatistics                            int64 // row groups answered from footer statistics
	fromDictionaries                          int64 // row groups counted from dictionary codes
	hereReason, fallbackReason, volumeAddress string
}

func (a *aggregateCounters) chose(volume bool, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if volume {
		a.volume++
		return
	}
	a.here++
	if a.hereReason == "" {
		a.hereReason = reason
	}
}

// AggregateOnVolumes plans aq and aggregates each planned file on the
// volume holding it, handing each file's partial states (one Arrow record,
// a row per group: see sqlstmt.Partials) to partial and the rows of the
// files read here instead to rows. A NotAggregatedError means neither
// sink was called.
func (c *Connector) AggregateOnVolumes(ctx context.Context, aq AggregateQuery, partial, rows func(arrow.RecordBatch) error) (*Result, error) {
	if c.opts.NoPushdown {
		return nil, &NotAggregatedError{"pushdown disabled (-no-pushdown)"}
	}
	q := aq.Query
	q.Limit, q.Offset, q.Vector = 0, 0, nil
	if q.CountOnly && (len(aq.GroupBy) > 0 || slices.ContainsFunc(aq.Aggregates, func(a AggregateCall) bool {
		return a.Func != pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS
	})) {
		return nil, errors.New("Query.CountOnly aggregates COUNT(*) alone: the rows read here carry no columns")
	}
	ac := &aggregateCounters{}
	res, err := c.answerWith(q, rows, func(rq Query) (*Result, error) {
		// the volumes need the row groups and their deletes: the catalog
		// plans every file rather than stop at the manifest tier
		t0 := time.Now()
		var p *prepared
		var resp *pushdown_pb.ParquetPushdownResponse
		var err error
		if aq.Plan != nil {
			if p, err = c.prepare(ctx, rq, !c.opts.ClientResolved); err != nil {
				return nil, err
			}
			if !planOf(aq.Plan, p) {
				p = nil // made from another version: plan anew
			} else {
				resp = aq.Plan
			}
		}
		if p == nil {
			if p, resp, err = c.wholePlan(ctx, rq); p == nil {
				return nil, err // the query does not bind
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &NotAggregatedError{"no plan: " + truncate(err.Error(), 200)}
		}
		switch {
		case resp.GetTruncated():
			return nil, &NotAggregatedError{"the plan was truncated"}
		case resp.GetStats().GetPlanningSkipped():
			return nil, &NotAggregatedError{"the catalog planned no row groups (" + resp.GetStats().GetCostReason() + ")"}
		}
		planMs := time.Since(t0).Milliseconds()
		t1 := time.Now()
		res, err := c.aggregatePlan(ctx, p, resp, aq, ac, partial)
		if err != nil {
			return nil, err
		}
		res.Stats.PlanMs, res.Stats.ReadMs = planMs, time.Since(t1).Milliseconds()
		res.Stats.MetadataCached = p.fromCache
		res.Stats.BytesPlanned = resp.GetStats().GetBytesPlanned()
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	st := &res.Stats
	st.AggregateAt = aq.Site.String()
	st.AggregateVolumeFiles, st.AggregateHereFiles, st.AggregateVolumeFallbacks = ac.volume, ac.here, ac.fallbacks
	st.BytesAggregateVolume, st.AggregateVolumeGroups, st.AggregateStatisticsRowGroups = ac.bytes, ac.groups, ac.fromStatistics
	st.DictionaryCountedRowGroups += ac.fromDictionaries
	st.AggregateHereReason, st.AggregateFallbackReason = ac.hereReason, ac.fallbackReason
	st.BytesRead += ac.bytes
	return res, nil
}

// aggregateFile is one planned file of an aggregation.
type aggregateFile struct {
	f     *fileRead
	addr  string
	rec   arrow.RecordBatch
	err   error
	bytes int64
	stats int64 // row groups the volume answered from statistics
	dicts int64 // row groups the volume counted from dictionary codes
}

// aggregatePlan sends the plan's files to the volumes, reads the others
// here.
func (c *Connector) aggregatePlan(ctx context.Context, p *prepared, resp *pushdown_pb.ParquetPushdownResponse, aq AggregateQuery,
	ac *aggregateCounters, partial func(arrow.RecordBatch) error) (*Result, error) {
	var order []*aggregateFile
	for _, f := range filesOf(resp) {
		order = append(order, &aggregateFile{f: f})
	}
	ids, err := aggregateFieldIDs(p, aq)
	if err != nil {
		return nil, &NotAggregatedError{err.Error()}
	}
	var volume, here []*aggregateFile
	for _, af := range order {
		if len(af.f.rgRefs) == 0 {
			continue
		}
		why, err := c.aggregateSiteOf(ctx, p, af, ids, aq.Site)
		if err != nil {
			return nil, err
		}
		ac.chose(why == "", why)
		if why == "" {
			volume = append(volume, af)
		} else {
			here = append(here, af)
		}
	}
	// 8 calls at once; a call's failure is its file's (read here), so the
	// group's error is only a panic, which fails the query
	g, _ := safe.Group(ctx, "aggregate rows")
	g.SetLimit(8)
	for _, af := range volume {
		g.Go(func() error {
			af.rec, af.bytes, af.stats, af.dicts, af.err = c.fetch.aggregateRows(ctx, af.addr, p, af.f, aq, ids)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		for _, af := range volume {
			if af.rec != nil {
				af.rec.Release()
			}
		}
		return nil, err
	}
	defer func() {
		for _, af := range volume {
			if af.rec != nil {
				af.rec.Release()
			}
		}
	}()
	for _, af := range volume {
		if af.err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if code := status.Code(af.err); code == codes.Unavailable || code == codes.DeadlineExceeded {
				c.fetch.volume.markDown(af.addr, af.err)
			}
			ac.mu.Lock()
			ac.fallbacks++
			ac.volume--
			ac.here++
			ac.fallbackReason = truncate(af.err.Error(), 300)
			ac.mu.Unlock()
			here = append(here, af)
			continue
		}
		ac.bytes += af.bytes
		ac.fromStatistics += af.stats
		ac.fromDictionaries += af.dicts
		ac.groups += af.rec.NumRows()
		if err := partial(af.rec); err != nil {
			return nil, err
		}
	}
	res := &Result{Stats: Stats{Pushdown: true, Mode: map[Mode]string{PageAware: "page-aware", RowGroup: "row-group"}[c.opts.Mode]}}
	if len(here) > 0 {
		files := make([]*fileRead, len(here))
		for i, af := range here {
			files[i] = af.f
		}
		read, err := c.readFiles(ctx, p, files)
		if err != nil {
			return nil, err
		}
		res = read
	}
	res.Stats.Files += int(ac.volume)
	for _, af := range volume {
		if af.err == nil {
			res.Stats.RowGroups += len(af.f.rgRefs)
		}
	}
	if res.Schema == nil {
		res.Schema = emptySchema(p)
	}
	return res, nil
}

// aggregateIDs are the field ids of an aggregation's grouping columns and
// of each aggregate's argument (0 for COUNT(*)).
type aggregateIDs struct{ group, args []int }

func aggregateFieldIDs(p *prepared, aq AggregateQuery) (*aggregateIDs, error) {
	out := &aggregateIDs{}
	id := func(name string) (int, error) {
		f, ok := p.schema.FindFieldByName(name)
		if !ok {
			return 0, fmt.Errorf("no column %s", truncate(name, 64))
		}
		return f.ID, nil
	}
	for _, g := range aq.GroupBy {
		i, err := id(g)
		if err != nil {
			return nil, err
		}
		out.group = append(out.group, i)
	}
	for _, a := range aq.Aggregates {
		i := 0
		if a.Column != "" {
			var err error
			if i, err = id(a.Column); err != nil {
				return nil, err
			}
		}
		out.args = append(out.args, i)
	}
	return out, nil
}

// aggregateSiteOf says why file af is aggregated here ("": on the volume
// af.addr, set).
func (c *Connector) aggregateSiteOf(ctx context.Context, p *prepared, af *aggregateFile, ids *aggregateIDs, site AggregateSite) (string, error) {
	if site == AggregateHere {
		return "-aggregateAt here", nil
	}
	addr, routed, err := c.fetch.volumeRoute(af.f.pf)
	if err != nil {
		return "", err
	}
	if !routed {
		return "the plan names no reachable volume pushdown service holding the file", nil
	}
	if err := af.f.prepare(ctx, c, p); err != nil {
		return "", err
	}
	_, noPredicate := p.expr.(predicate.Const)
	if !noPredicate {
		if why := volumeCanFilter(p, af.f); why != "" {
			return why, nil
		}
	}
	fl := af.f.fl
	for _, id := range append(append([]int{}, ids.group...), ids.args...) {
		if id == 0 {
			continue
		}
		name, _ := p.schema.FindColumnName(id)
		if _, nested := p.parents[id]; nested {
			return "column " + truncate(name, 64) + " is nested", nil
		}
		if _, isConst := fl.consts[id]; isConst || len(fl.columns.Leaves(id)) != 1 {
			return "the file does not store column " + truncate(name, 64) + " as one column", nil
		}
		top, _ := fl.topFieldOf(id)
		want, err := tableArrowType(p.schema, id)
		if err != nil {
			return "column " + truncate(name, 64) + ": " + err.Error(), nil
		}
		if got := plainArrowType(fl.arrow.Field(top).Type); !arrow.TypeEqual(got, want) {
			return fmt.Sprintf("column %s is %s in the file, %s in the table", truncate(name, 64), got, want), nil
		}
	}
	if site == AggregateAuto && !noPredicate && isLocalAddr(addr) {
		for _, rg := range af.f.rgRefs {
			if !rg.GetRowsExact() {
				return "the predicate would be evaluated row by row beside the data on this host (slower than here; -aggregateAt volume overrides)", nil
			}
		}
	}
	af.addr = addr
	return "", nil
}

// tableArrowType is the Arrow type the connector reads field id as.
func tableArrowType(s *iceberg.Schema, id int) (arrow.DataType, error) {
	f, ok := s.FindFieldByID(id)
	if !ok {
		return nil, fmt.Errorf("no field %d", id)
	}
	as, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, f), nil, true, false)
	if err != nil {
		return nil, err
	}
	return plainArrowType(as.Field(0).Type), nil
}

func plainArrowType(t arrow.DataType) arrow.DataType {
	if d, ok := t.(*arrow.DictionaryType); ok {
		return d.ValueType
	}
	return t
}

// aggregateRows asks the volume at addr for the partial aggregates of
// file f's planned row groups.
func (ft *fetcher) aggregateRows(ctx context.Context, addr string, p *prepared, f *fileRead, aq AggregateQuery, ids *aggregateIDs) (_ arrow.RecordBatch, bytes, fromStatistics, fromDictionaries int64, _ error) {
	pf := f.pf
	schemaJSON, err := p.scanSchemaJSON()
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("encode the schema: %w", err)
	}
	req := &pushdown_pb.AggregateRowsRequest{Path: pf.GetFile(), SizeBytes: pf.GetSizeBytes(), RecordCount: pf.GetRecordCount(), Identity: pf.GetIdentity(),
		SchemaJson: schemaJSON, MaxGroups: aq.MaxGroups}
	if _, noPredicate := p.expr.(predicate.Const); !noPredicate {
		req.PredicateKind, req.Predicate = p.req.GetPredicateKind(), p.req.GetPredicate()
	}
	for _, id := range ids.group {
		req.GroupFieldIds = append(req.GroupFieldIds, int32(id))
	}
	for i, a := range aq.Aggregates {
		req.Aggregates = append(req.Aggregates, &pushdown_pb.AggregateSpec{Func: a.Func, FieldId: int32(ids.args[i])})
	}
	if f.fl != nil && f.fl.mapping != nil {
		if req.NameMappingJson, err = json.Marshal(f.fl.mapping); err != nil {
			return nil, 0, 0, 0, err
		}
	}
	for _, ref := range f.rgRefs {
		g := &pushdown_pb.ScanRowGroup{RowGroup: ref.GetRowGroup(), RowRanges: ref.GetRowRanges(), DeletedPositions: ref.GetDeletedPositions()}
		if len(ref.GetRowPositions()) > 0 {
			if g.RowRanges, err = positionRanges(ref.GetRowPositions(), ref.GetRowCount()); err != nil {
				return nil, 0, 0, 0, err
			}
			if len(g.RowRanges) == 0 {
				continue // no planned row
			}
		}
		if ref.GetRowsExact() {
			req.ExactRowGroups = append(req.ExactRowGroups, ref.GetRowGroup())
		}
		req.RowGroups = append(req.RowGroups, g)
	}
	if len(req.RowGroups) == 0 {
		return nil, 0, 0, 0, errors.New("no planned rows")
	}
	conn, err := ft.volume.conn(addr)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("dial: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, volumeCallTimeout)
	defer cancel()
	if cctx, err = ft.volume.sign(cctx, addr, "AggregateRows", req); err != nil {
		return nil, 0, 0, 0, fmt.Errorf("sign AggregateRows: %w", err)
	}
	resp, err := pushdown_pb.NewPushdownVolumeClient(conn).AggregateRows(cctx, req)
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("AggregateRows %s: %w", pf.GetFile(), err)
	}
	rd, err := ipc.NewReader(stdbytes.NewReader(resp.GetPartialsIpc()))
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("AggregateRows %s: Arrow IPC: %w", pf.GetFile(), err)
	}
	defer rd.Release()
	if !rd.Next() {
		return nil, 0, 0, 0, fmt.Errorf("AggregateRows %s: the answer holds no record: %v", pf.GetFile(), rd.Err())
	}
	rec := rd.RecordBatch()
	if rec.NumRows() != resp.GetGroups() {
		return nil, 0, 0, 0, fmt.Errorf("AggregateRows %s: %d groups said, %d sent", pf.GetFile(), resp.GetGroups(), rec.NumRows())
	}
	rec.Retain()
	return rec, int64(len(resp.GetPartialsIpc())), resp.GetRowGroupsFromStatistics(), resp.GetRowGroupsFromDictionaries(), nil
}

// positionRanges are the runs of a plan's row positions (row-group-local)
// as row ranges.
func positionRanges(positions []byte, n int64) ([]*pushdown_pb.RowRange, error) {
	bm, err := rowbits.Decode(positions)
	if err != nil {
		return nil, fmt.Errorf("the plan's row positions: %w", err)
	}
	var out []*pushdown_pb.RowRange
	it := bm.Iterator()
	for it.HasNext() {
		r := int64(it.Next())
		if r >= n {
			return nil, fmt.Errorf("the plan's row position %d is past the row group's %d rows", r, n)
		}
		if k := len(out); k > 0 && out[k-1].End == r {
			out[k-1].End++
			continue
		}
		out = append(out, &pushdown_pb.RowRange{Start: r, End: r + 1})
	}
	return out, nil
}

// planOf reports whether resp was planned from the metadata version,
// snapshot and schema p is bound to (so it is p's plan).
func planOf(resp *pushdown_pb.ParquetPushdownResponse, p *prepared) bool {
	snap := p.snapshot
	if cur := p.tbl.CurrentSnapshot(); snap == 0 && cur != nil {
		snap = cur.SnapshotID
	}
	return resp.GetMetadataLocation() != "" && resp.GetMetadataLocation() == p.tbl.MetadataLocation() &&
		resp.GetSnapshotId() == snap && int(resp.GetSchemaId()) == p.schema.ID
}
