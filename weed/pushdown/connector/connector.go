// Package connector reads Iceberg tables stored in lakeweed the
// pushdown-aware way, and falls back to a plain read when it cannot:
//
//	Query(table, WHERE, SELECT, LIMIT)
//	   │ schema from the Iceberg REST catalog; WHERE bound to field ids
//	   ▼
//	PushdownCatalog.Plan ──unreachable / refused / not worth it──▶ plain read
//	   │                                                          (iceberg-go scan
//	   ▼                                                           through S3)
//	per planned file (plan stage, planfiles.go):
//	   footer (one ranged GET, cached)
//	per row group, scheduled on the cores (schedule.go), through the
//	pipeline's stages (pipeline.go, read.go's diagram):
//	   volume:  rows the volume holding the file decoded or filtered
//	   fetch:   planned byte ranges ── the volume pushdown service or
//	            concurrent ranged GETs through the S3 gateway
//	   decode:  page-aware: only the planned pages (+ dictionary) of
//	                        single-leaf columns in narrowed row groups
//	            row-group:  whole column chunks of the planned row groups
//	   filter:  row ranges − deleted positions (the plan's delete masks)
//	              ∩ predicate (vectorized over the decoded Arrow columns,
//	                filter.go)
//	   project: the SELECT's columns ──▶ Arrow
//
// Rows are those matching the predicate under IEEE semantics for NaN (the
// semantics of iceberg-go's scan and Arrow compute), so the pushdown and
// plain paths agree row for row.
package connector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pqcodec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

// Mode is how planned data is decoded.
type Mode int

const (
	// PageAware decodes only the planned pages (plus dictionaries).
	PageAware Mode = iota
	// RowGroup decodes whole column chunks of the planned row groups, for
	// readers that cannot do page-granular I/O.
	RowGroup
)

// DefaultPageCacheBytes is the process's page cache a connector turns on
// where nothing sized it (Options.PageCacheBytes).
const DefaultPageCacheBytes = 256 << 20

// Options configure a Connector.
type Options struct {
	Endpoints   lakeclient.Endpoints
	Mode        Mode
	NoFallback  bool // return an error instead of reading plainly when pushdown is unavailable
	NoPushdown  bool // always read plainly (for comparison)
	Force       bool // push down even when the cost model advises against it
	Concurrency int  // ranged GETs in flight (default 16)
	// Read is where planned files' bytes are read: ReadAuto (default) from
	// the volume pushdown service the plan names for each file, through the
	// S3 gateway where it names none or that read fails (fetch_volume.go);
	// ReadVolume only there; ReadS3 only through the gateway.
	Read ReadPath
	// RangeCacheBytes bounds the range cache of fetched bytes kept across
	// queries (0: 256 MiB; negative: none, every query reads its bytes).
	RangeCacheBytes int64
	// PageCacheBytes sizes the process's uncompressed page cache (pqcodec:
	// zstd pages kept decoded by their compressed bytes, so a warm query
	// copies a page instead of decompressing it again) when nothing in the
	// process sized it yet (0: 256 MiB; negative: none). The cache is the
	// process's, shared with every connector and pushdown service in it: a
	// weed process's -pushdown.pageCacheMB, or the first connector, sizes it.
	PageCacheBytes int64
	// NoVolumeRows reads exact row groups' pages here instead of asking the
	// volume pushdown service for their matching rows (fetch_rows.go).
	NoVolumeRows bool
	// VolumeRowsMinBytes: an exact row group whose planned pages (of the
	// columns read) are at most this many bytes is read here, not asked of
	// the volume (0: 64 KiB; negative: asked however small).
	VolumeRowsMinBytes int64
	// FilterAt is where the predicate of a row group side indexes did not
	// answer exactly is evaluated: FilterAuto (default) by the cost model,
	// per row group; FilterHere always here; FilterVolume by the volume
	// pushdown service holding the file whenever it can (fetch_scan.go).
	FilterAt FilterSite
	// Workers decode and filter row groups in parallel (default: one per
	// core); MaxBufferBytes bounds the bytes of row groups read ahead of
	// the one the result is waiting for (default 256 MiB; at least one
	// row group is always read).
	Workers        int
	MaxBufferBytes int64
	// ClientResolved does the Iceberg planning here (iceberg-go's scan
	// planning) and sends the data files with their delete files in the
	// Plan request, for catalogs in connector-trusted or catalog-validated
	// mode.
	ClientResolved bool
	// Token is sent as "authorization: Bearer <token>" with Plan requests
	// (connector-trusted catalogs accept a token signed with the cluster's
	// [jwt.filer_signing] key).
	Token string
	// Progress, when set, is told how many planned files were read.
	Progress func(done, total int)
}

// Query is one read.
type Query struct {
	Table    string // namespace.table
	Snapshot int64  // 0: current
	Where    string // SQL predicate; empty: every row
	// Clause is the predicate already parsed (a SELECT's WHERE, handed on
	// by sqlexec so the SQL is parsed once); when set, Where is not read.
	Clause *sqlpred.Clause
	Select []string
	Limit  int64 // 0: no limit; with Vector: k, 1 to MaxVectorK
	// Offset skips that many rows of the answer before the Limit's rows
	// (SQL's OFFSET; rows come in read order: the plan's file and row
	// group order, or the scan's file order on a plain read). Not with
	// Vector.
	Offset int64
	// Vector orders the rows by a vector distance, nearest first, and
	// returns the Limit nearest (vectors.go).
	Vector *VectorQuery
	// CountOnly: only how many rows match is wanted (COUNT(*)). The
	// records handed on carry no columns, only their row counts: the
	// predicate's columns are decoded and evaluated, nothing is projected
	// (a volume sends no columns), and a plain read's columns are dropped.
	// Not with Vector.
	CountOnly bool
	// out receives the records the readers produce, in order (output.go);
	// the readers see Limit as the rows they must produce (OFFSET + LIMIT).
	out *output
}

// Stats describe how a query was answered.
type Stats struct {
	Pushdown       bool   `json:"pushdown"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	Mode           string `json:"mode,omitempty"`
	Rows           int64  `json:"rows"`
	BytesRead      int64  `json:"bytes_read"`
	// Bytes read per path: from volume pushdown services (of which
	// BytesVolumeLocal from their own volume servers' chunks) and through
	// the S3 gateway (planned ranges and plain reads); ReadFallbacks counts
	// volume reads done through the S3 gateway instead (ReadFallbackReason:
	// the last one's cause).
	ReadPath           string `json:"read_path,omitempty"`
	BytesVolume        int64  `json:"bytes_volume"`
	BytesVolumeLocal   int64  `json:"bytes_volume_local"`
	BytesS3            int64  `json:"bytes_s3"`
	VolumeCalls        int64  `json:"volume_calls,omitempty"`
	ReadFallbacks      int64  `json:"read_fallbacks"`
	ReadFallbackReason string `json:"read_fallback_reason,omitempty"`
	Ranges             int64  `json:"ranges"`
	Files              int    `json:"files"`
	RowGroups          int    `json:"row_groups"`
	BytesPlanned       int64  `json:"bytes_planned,omitempty"`
	// SparseColumns counts the columns of row groups decoded at their
	// wanted rows only (decode_sparse.go).
	SparseColumns int64 `json:"sparse_columns,omitempty"`
	// RowsDecoded counts the rows of the row groups decoded: under a LIMIT
	// a row group decodes a window at a time, only until the LIMIT is met.
	RowsDecoded int64 `json:"rows_decoded,omitempty"`
	// ExactRowGroups counts the row groups whose planned rows side indexes
	// answered exactly (every leaf of the predicate): read without
	// evaluating the predicate.
	ExactRowGroups int64 `json:"exact_row_groups,omitempty"`
	// VolumeRowGroups counts the exact row groups whose matching rows the
	// volume pushdown service holding the file decoded and sent
	// (ReadRows): their pages were not read here.
	VolumeRowGroups int64 `json:"volume_row_groups,omitempty"`
	// DictionaryCountedRowGroups counts the row groups of a COUNT(*)
	// counted from their predicate column's dictionary codes
	// (count_dict.go): their rows were not decoded.
	DictionaryCountedRowGroups int64 `json:"dictionary_counted_row_groups,omitempty"`
	// Where the predicate of row groups side indexes did not answer
	// exactly was evaluated (fetch_scan.go): FilterAt is the -filterAt
	// setting; row groups filtered by the volume (ScanRows) and here, the
	// first reason of each choice, volume calls that failed and were read
	// here instead (FilterVolumeFallbacks, the last reason), the rows the
	// volume evaluated and returned and the bytes it sent.
	FilterAt                  string `json:"filter_at,omitempty"`
	FilterVolumeRowGroups     int64  `json:"filter_volume_row_groups,omitempty"`
	FilterHereRowGroups       int64  `json:"filter_here_row_groups,omitempty"`
	FilterVolumeReason        string `json:"filter_volume_reason,omitempty"`
	FilterHereReason          string `json:"filter_here_reason,omitempty"`
	FilterVolumeFallbacks     int64  `json:"filter_volume_fallbacks,omitempty"`
	FilterFallbackReason      string `json:"filter_fallback_reason,omitempty"`
	FilterVolumeRowsEvaluated int64  `json:"filter_volume_rows_evaluated,omitempty"`
	FilterVolumeRows          int64  `json:"filter_volume_rows,omitempty"`
	BytesFilterVolume         int64  `json:"bytes_filter_volume,omitempty"`
	// Where a GROUP BY's aggregates were computed (aggregate_volume.go):
	// AggregateAt is the -aggregateAt setting; files aggregated by the
	// volume holding them (AggregateRows) and read here, calls that failed
	// and were read here instead, the first reason a file was read here,
	// the last failure's, the partial groups received and their bytes.
	AggregateAt              string `json:"aggregate_at,omitempty"`
	AggregateVolumeFiles     int64  `json:"aggregate_volume_files,omitempty"`
	AggregateHereFiles       int64  `json:"aggregate_here_files,omitempty"`
	AggregateVolumeFallbacks int64  `json:"aggregate_volume_fallbacks,omitempty"`
	AggregateHereReason      string `json:"aggregate_here_reason,omitempty"`
	AggregateFallbackReason  string `json:"aggregate_fallback_reason,omitempty"`
	AggregateVolumeGroups    int64  `json:"aggregate_volume_groups,omitempty"`
	BytesAggregateVolume     int64  `json:"bytes_aggregate_volume,omitempty"`
	// AggregateStatisticsRowGroups: row groups a volume answered from
	// their footer statistics (every row qualifying; COUNT, MIN, MAX of
	// integer-backed columns), decoding nothing.
	AggregateStatisticsRowGroups int64 `json:"aggregate_statistics_row_groups,omitempty"`
	// CostNote: the plan was read although the cost model advised against
	// pushdown, because it reads fewer bytes than a plain scan.
	CostNote string `json:"cost_note,omitempty"`
	// MetadataCached: the table's metadata was the connector's cached
	// copy, which the plan confirmed current (no LoadTable).
	MetadataCached bool  `json:"metadata_cached,omitempty"`
	ElapsedMs      int64 `json:"elapsed_ms"`
	PlanMs         int64 `json:"plan_ms"`
	ReadMs         int64 `json:"read_ms"`
	*VectorStats         // vector queries only
}

// Result is a query's answer. Records is empty when the records were
// streamed (Connector.Stream).
type Result struct {
	Schema  *arrow.Schema
	Records []arrow.RecordBatch
	Stats   Stats
}

// Release frees the records.
func (r *Result) Release() {
	for _, rec := range r.Records {
		rec.Release()
	}
}

// NumRows counts the result rows.
func (r *Result) NumRows() int64 {
	var n int64
	for _, rec := range r.Records {
		n += rec.NumRows()
	}
	return n
}

// Connector reads tables of one cluster.
type Connector struct {
	opts      Options
	s3        *s3.Client
	fetch     *fetcher
	footers   *lru.Cache[metaKey, *fileMeta]
	tables    *tableCache
	cat       *rest.Catalog
	pool      *grpcutil.ConnPool
	plainHTTP *countingTransport // the plain path's S3 traffic (iceberg-go's scan, footers)
	plainS3   *s3.Client         // the S3 gateway through plainHTTP
	*plainOwn
}

// New connects to a cluster's Iceberg catalog and S3 gateway.
func New(ctx context.Context, o Options) (*Connector, error) {
	o.Endpoints = o.Endpoints.Defaults()
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.MaxBufferBytes == 0 {
		o.MaxBufferBytes = 256 << 20
	}
	cat, err := lakeclient.NewIcebergCatalog(ctx, o.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST catalog %s: %w", o.Endpoints.Iceberg, err)
	}
	client := lakeclient.NewS3Client(o.Endpoints)
	rangeCache := o.RangeCacheBytes
	if rangeCache == 0 {
		rangeCache = 256 << 20
	}
	if o.PageCacheBytes == 0 {
		o.PageCacheBytes = DefaultPageCacheBytes
	}
	pqcodec.EnsurePageCache(o.PageCacheBytes)
	pool := grpcutil.NewConnPool(grpcutil.ClientDialOption())
	volume := &volumeReader{conn: func(addr string) (grpc.ClientConnInterface, error) { return pool.Get(addr) }, sign: o.Endpoints.SignCall}
	c := &Connector{opts: o, s3: client, cat: cat, pool: pool,
		fetch:     &fetcher{client: client, concurrency: o.Concurrency, capacity: rangeCache, path: o.Read, volume: volume},
		footers:   newLRU[metaKey, *fileMeta](4096),
		tables:    &tableCache{Cache: newLRU[string, *tableEntry](1024)},
		plainHTTP: &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}, plainOwn: &plainOwn{}}
	c.plainS3 = s3.New(client.Options(), func(so *s3.Options) { so.HTTPClient = &http.Client{Transport: c.plainHTTP} })
	return c, nil
}

// Close releases connections.
func (c *Connector) Close() { c.pool.Close() }

// prepared is a query bound to a table.
type prepared struct {
	q         Query
	tbl       *table.Table
	schema    *iceberg.Schema
	snapshot  int64
	bound     iceberg.BooleanExpression
	unbound   iceberg.BooleanExpression // for iceberg-go's scan, which binds itself
	expr      predicate.Expr
	selectIDs []int
	defaults  map[int]fieldDefault // initial-defaults of fields, read where a file lacks the field
	parents   map[int]int          // nested field id → enclosing struct's field id
	mapping   iceberg.NameMapping  // the table's name mapping (files without field ids)
	// identity partition fields by spec, and the snapshot's manifest
	// partitions (read when a file lacks an identity-partitioned field)
	identity   identityFields
	partitions *partitionIndex
	req        *pushdown_pb.ParquetPushdownRequest
	// schemaJSON is schema's Iceberg JSON, encoded on first use (ScanRows)
	schemaJSON *lazyJSON
	// fromCache: tbl is the connector's cached metadata, not yet checked
	// against the table's current version.
	fromCache bool
}

// prepare binds q to its table's metadata: the connector's cached copy
// when cached (verified against the plan's metadata_location before any
// data is read), otherwise loaded from the Iceberg REST catalog.
func (c *Connector) prepare(ctx context.Context, q Query, cached bool) (*prepared, error) {
	p, err := c.bind(ctx, q, cached)
	if err != nil && cached {
		// a column or snapshot the cached copy does not know may be one
		// another writer added: the current metadata decides
		c.tables.Remove(q.Table)
		return c.bind(ctx, q, false)
	}
	return p, err
}

func (c *Connector) bind(ctx context.Context, q Query, cached bool) (*prepared, error) {
	ident, err := lakeclient.ParseIdentifier(q.Table)
	if err != nil {
		return nil, err
	}
	var te *tableEntry
	if cached && !c.tables.off.Load() {
		te, _ = c.tables.Get(q.Table)
	}
	fromCache := te != nil
	if te == nil {
		tbl, err := c.cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, fmt.Errorf("load table %s: %w", q.Table, err)
		}
		te = &tableEntry{tbl: tbl, mapping: tbl.Metadata().NameMapping(), wheres: newLRU[whereKey, *boundWhere](64)}
		c.tables.Add(q.Table, te)
	}
	tbl := te.tbl
	p := &prepared{q: q, tbl: tbl, schema: tbl.Schema(), fromCache: fromCache, mapping: te.mapping, schemaJSON: &lazyJSON{}}
	if q.Snapshot != 0 {
		s := tbl.SnapshotByID(q.Snapshot)
		if s == nil {
			return nil, fmt.Errorf("snapshot %d is not a snapshot of %s", q.Snapshot, q.Table)
		}
		p.snapshot = q.Snapshot
		if s.SchemaID != nil {
			if sc, ok := tbl.Schemas()[*s.SchemaID]; ok {
				p.schema = sc
			}
		}
	}
	if p.defaults, err = initialDefaults(p.schema); err != nil {
		return nil, fmt.Errorf("%s: %w", q.Table, err)
	}
	p.parents = parentIDs(p.schema)
	p.identity, p.partitions = identityFieldsOf(tbl.Metadata()), &partitionIndex{}
	w, err := te.boundWhere(q.Where, q.Clause, p.schema)
	if err != nil {
		return nil, err
	}
	p.bound, p.unbound, p.expr = w.bound, w.unbound, w.expr
	// Force reads the plan whatever the cost model says: the catalog plans
	// every file for it rather than stop at the manifest tier.
	p.req = &pushdown_pb.ParquetPushdownRequest{Table: q.Table, Warehouse: c.opts.Endpoints.Warehouse, SchemaId: ptr(int32(p.schema.ID)), DecideEarly: !c.opts.Force, AcceptsRowPositions: true, NestByFile: true}
	if q.Vector == nil {
		// any Limit matching rows will do: the plan may stop at them
		p.req.Limit = q.Limit
	}
	if p.snapshot != 0 {
		p.req.SnapshotId = ptr(p.snapshot)
	}
	if c.opts.ClientResolved && !c.opts.NoPushdown {
		snap := p.snapshot
		if snap == 0 {
			if cur := tbl.CurrentSnapshot(); cur != nil {
				snap = cur.SnapshotID
			}
		}
		if snap != 0 {
			if p.req.DataFiles, err = descriptor.ForSnapshot(ctx, tbl, snap); err != nil {
				return nil, fmt.Errorf("plan %s at snapshot %d: %w", q.Table, snap, err)
			}
			p.req.SnapshotId = ptr(snap)
		}
	}
	if w.wire != nil {
		p.req.Predicate, p.req.PredicateKind = w.wire, pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT
	}
	if len(q.Select) == 0 {
		for _, f := range p.schema.Fields() {
			p.selectIDs = append(p.selectIDs, f.ID)
		}
	} else {
		ids, err := sqlpred.ColumnIDs(q.Select, p.schema)
		if err != nil {
			return nil, err
		}
		p.selectIDs = ids
	}
	planned := p.selectIDs
	if ids := predicate.FieldIDs(p.expr); q.CountOnly && len(ids) > 0 {
		planned = ids // a count reads the predicate's columns alone (needOf)
	}
	for _, id := range planned {
		name, _ := p.schema.FindColumnName(id)
		p.req.Columns = append(p.req.Columns, &pushdown_pb.ColumnRef{FieldId: int32(id), Path: name})
	}
	return p, nil
}

func ptr[T any](v T) *T { return &v }

// residual is the predicate the connector evaluates on rows, converted
// from the bound expression (predicate.FromBound: no Substrait round trip
// in the process), and wire, the Substrait form sent to the catalog (nil:
// every row); predicate's tests hold the two equal, so both sides
// evaluate the same expression.
func residual(s *iceberg.Schema, bound iceberg.BooleanExpression) (predicate.Expr, []byte, error) {
	if _, always := bound.(iceberg.AlwaysTrue); always {
		return predicate.Const{Value: true}, nil, nil
	}
	wire, err := predicate.EncodeSubstrait(s, bound)
	if err != nil {
		return nil, nil, err
	}
	raw, err := predicate.FromBound(bound)
	if err != nil {
		return nil, nil, err
	}
	e, err := predicate.Bind(raw, s, predicate.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	return e, wire, nil
}

// Query answers q, its records kept in the result.
func (c *Connector) Query(ctx context.Context, q Query) (*Result, error) {
	return c.answer(ctx, q, nil)
}

// Stream answers q, handing each record to sink in order as it is read
// (sink must not keep a record past the call; an error from it stops the
// read and is returned). Memory stays bounded by the read-ahead
// (Options.MaxBufferBytes), however many rows the answer has. The
// result carries the schema and statistics, no records.
func (c *Connector) Stream(ctx context.Context, q Query, sink func(arrow.RecordBatch) error) (*Result, error) {
	if sink == nil {
		return nil, errors.New("Stream needs a sink")
	}
	return c.answer(ctx, q, sink)
}

// answer runs q: its records go through an output (OFFSET, LIMIT) to sink,
// or into the result when sink is nil.
func (c *Connector) answer(ctx context.Context, q Query, sink func(arrow.RecordBatch) error) (*Result, error) {
	switch {
	case q.Offset < 0:
		return nil, fmt.Errorf("OFFSET %d is negative", q.Offset)
	case q.Limit < 0:
		return nil, fmt.Errorf("LIMIT %d is negative", q.Limit)
	case q.Offset > 0 && q.Vector != nil:
		return nil, errors.New("OFFSET is not supported with ORDER BY a vector distance: raise the LIMIT and skip the first rows yourself")
	case q.CountOnly && q.Vector != nil:
		return nil, errors.New("counting rows is not supported with ORDER BY a vector distance")
	}
	return c.answerWith(q, sink, func(rq Query) (*Result, error) {
		if rq.Vector != nil {
			return c.vectorQuery(ctx, rq)
		}
		return c.query(ctx, rq)
	})
}

// answerWith runs q with run, which reads rq: q with its LIMIT raised by
// its OFFSET and its output set.
func (c *Connector) answerWith(q Query, sink func(arrow.RecordBatch) error, run func(rq Query) (*Result, error)) (*Result, error) {
	kept := &Result{}
	out := newOutput(q, kept, sink)
	rq := q
	rq.Limit, rq.Offset, rq.out = readLimit(q), 0, out
	res, err := c.measured(func() (*Result, error) { return run(rq) }, out)
	if err != nil {
		kept.Release()
		return nil, err
	}
	res.Records, res.Stats.Rows = kept.Records, out.rows
	if q.CountOnly {
		res.Schema = countSchema // whichever path read it
	}
	return res, nil
}

// measured runs a query and adds what it read and how long it took; the
// records a path returned itself (a vector search's) go through out.
func (c *Connector) measured(run func() (*Result, error), out *output) (*Result, error) {
	start := time.Now()
	bytes0, req0 := c.fetch.bytes.Load(), c.fetch.requests.Load()
	pb0, pr0 := c.plainHTTP.bytes.Load(), c.plainHTTP.requests.Load()
	vol := &c.fetch.vol
	vb0, vl0, vr0, vc0, vf0 := vol.bytes.Load(), vol.local.Load(), vol.ranges.Load(), vol.calls.Load(), vol.fallbacks.Load()
	res, err := run()
	if err != nil {
		return nil, err
	}
	for i, rec := range res.Records {
		if _, err := out.add(rec); err != nil {
			for _, rest := range res.Records[i+1:] {
				rest.Release()
			}
			return nil, err
		}
	}
	res.Records = nil
	res.Stats.ElapsedMs = time.Since(start).Milliseconds()
	st := &res.Stats
	st.ReadPath = c.opts.Read.String()
	st.BytesS3 = c.fetch.bytes.Load() - bytes0 + c.plainHTTP.bytes.Load() - pb0
	st.BytesVolume, st.BytesVolumeLocal = vol.bytes.Load()-vb0, vol.local.Load()-vl0
	st.VolumeCalls, st.ReadFallbacks = vol.calls.Load()-vc0, vol.fallbacks.Load()-vf0
	if r := vol.reason.Load(); st.ReadFallbacks > 0 && r != nil {
		st.ReadFallbackReason = *r
	}
	st.BytesRead = st.BytesS3 + st.BytesVolume
	st.Ranges = c.fetch.requests.Load() - req0 + c.plainHTTP.requests.Load() - pr0 + vol.ranges.Load() - vr0
	return res, nil
}

// query answers a query without a vector order.
func (c *Connector) query(ctx context.Context, q Query) (*Result, error) {
	// Table metadata is cached on the pushdown path only: the plan says
	// which metadata version it was made from.
	p, err := c.prepare(ctx, q, !c.opts.NoPushdown && !c.opts.ClientResolved)
	if err != nil {
		return nil, err
	}
	if c.opts.NoPushdown {
		return c.plain(ctx, p, "pushdown disabled (-no-pushdown)")
	}
	return c.pushdown(ctx, p)
}

// pushdown plans, then reads the plan; on a reason not to push down it
// reads plainly (unless NoFallback).
func (c *Connector) pushdown(ctx context.Context, p *prepared) (*Result, error) {
	t0 := time.Now()
	p, resp, err, bindErr := c.planCurrent(ctx, p, func() (*prepared, error) { return c.prepare(ctx, p.q, false) })
	if bindErr != nil {
		return nil, bindErr
	}
	planMs := time.Since(t0).Milliseconds()
	if err != nil && p.fromCache {
		// a plain read must not read a cached version
		c.tables.Remove(p.q.Table)
		var perr error
		if p, perr = c.prepare(ctx, p.q, false); perr != nil {
			return nil, perr
		}
	}
	if err != nil {
		reason := c.fallbackReason(err)
		if reason == "" || c.opts.NoFallback {
			return nil, err
		}
		res, err := c.plain(ctx, p, reason)
		if res != nil {
			res.Stats.PlanMs = planMs
		}
		return res, err
	}
	// A plan the cost model advises against is still read when it was
	// computed (not stopped at the manifest tier) and reads fewer bytes
	// than a plain scan: planning is paid, throwing it away would read more.
	st := resp.GetStats()
	var costNote string
	if !st.GetPushdownRecommended() && !c.opts.Force && !st.GetPlanningSkipped() && st.GetBytesPlanned() < st.GetBytesPlainScan() {
		costNote = fmt.Sprintf("the cost model advised against pushdown (%s), but the plan already made reads fewer bytes than a plain scan (%d < %d)",
			st.GetCostReason(), st.GetBytesPlanned(), st.GetBytesPlainScan())
	} else if !st.GetPushdownRecommended() && !c.opts.Force {
		if c.opts.NoFallback {
			return nil, fmt.Errorf("the cost model advises against pushdown (%s) and fallback is off", resp.GetStats().GetCostReason())
		}
		res, err := c.plain(ctx, p, "cost model: "+resp.GetStats().GetCostReason())
		if res != nil {
			res.Stats.PlanMs = planMs
		}
		return res, err
	}
	t1 := time.Now()
	res, err := c.readPlan(ctx, p, resp)
	if err != nil {
		return nil, err
	}
	res.Stats.PlanMs = planMs
	res.Stats.ReadMs = time.Since(t1).Milliseconds()
	res.Stats.MetadataCached = p.fromCache
	res.Stats.BytesPlanned = resp.GetStats().GetBytesPlanned()
	res.Stats.CostNote = costNote
	return res, nil
}

// planCurrent plans p's request. When p is bound to the connector's cached
// metadata and the plan was not made from that version (another writer
// committed, or the catalog does not say), the table is bound again by
// rebind (loading it) and planned again. err is the plan's error, bindErr
// rebind's.
func (c *Connector) planCurrent(ctx context.Context, p *prepared, rebind func() (*prepared, error)) (_ *prepared, _ *pushdown_pb.ParquetPushdownResponse, err, bindErr error) {
	resp, err := c.plan(ctx, p.req)
	if err == nil && p.fromCache && resp.GetMetadataLocation() != p.tbl.MetadataLocation() {
		if resp.GetMetadataLocation() == "" {
			c.tables.off.Store(true)
		}
		c.tables.Remove(p.q.Table)
		if p, bindErr = rebind(); bindErr != nil {
			return nil, nil, nil, bindErr
		}
		resp, err = c.plan(ctx, p.req)
	}
	return p, resp, err, nil
}

// fallbackReason says why a failed plan is answered by a plain read
// instead ("": the error is the answer).
func (c *Connector) fallbackReason(err error) string {
	msg := status.Convert(err).Message()
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Sprintf("catalog pushdown service %s unavailable: %s", c.opts.Endpoints.Catalog, msg)
	case codes.Unimplemented:
		return "the catalog cannot plan this query: " + msg
	case codes.FailedPrecondition:
		return "the catalog refused to plan: " + msg
	}
	var ce *connectError
	if errors.As(err, &ce) {
		return "catalog pushdown service unreachable: " + ce.Error()
	}
	return ""
}

// tableCache holds the last loaded metadata of each table queried; off
// once a catalog plans without naming its metadata version (nothing to
// check a cached copy against).
type tableCache struct {
	*lru.Cache[string, *tableEntry]
	off atomic.Bool
}

// newLRU is an LRU of a positive, constant size (lru.New fails only for a
// size below one).
func newLRU[K comparable, V any](size int) *lru.Cache[K, V] {
	c, _ := lru.New[K, V](size)
	return c
}

// tableEntry is a table's metadata with what is parsed from it once.
type tableEntry struct {
	tbl     *table.Table
	mapping iceberg.NameMapping
	wheres  *lru.Cache[whereKey, *boundWhere] // the last predicates bound to this metadata
}

// whereKey is a query's predicate (SQL) under one schema of the table.
type whereKey struct {
	schema int
	where  string
}

// boundWhere is a predicate parsed and bound once per metadata version:
// as iceberg-go binds it, unbound (for iceberg-go's scan), the residual
// the connector evaluates and its Substrait form sent to the catalog. All
// are read only once built, shared by the queries that use it.
type boundWhere struct {
	bound, unbound iceberg.BooleanExpression
	expr           predicate.Expr
	wire           []byte
}

// boundWhere is the predicate (clause, else where parsed) bound to s,
// from the entry's cache when it was bound to s before: a cached
// predicate is not parsed again.
func (te *tableEntry) boundWhere(where string, clause *sqlpred.Clause, s *iceberg.Schema) (*boundWhere, error) {
	if clause != nil {
		where = clause.Text
	}
	key := whereKey{s.ID, where}
	if w, ok := te.wheres.Get(key); ok {
		return w, nil
	}
	var err error
	if clause == nil {
		if clause, err = sqlpred.ParseClause(where); err != nil {
			return nil, err
		}
	}
	w := &boundWhere{}
	if w.unbound, w.bound, err = clause.Bind(s); err != nil {
		return nil, err
	}
	if w.expr, w.wire, err = residual(s, w.bound); err != nil {
		return nil, err
	}
	te.wheres.Add(key, w)
	return w, nil
}

type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }

func (c *Connector) plan(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	conn, err := c.pool.Get(c.opts.Endpoints.Catalog)
	if err != nil {
		return nil, &connectError{err}
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if c.opts.Token != "" {
		pctx = metadata.AppendToOutgoingContext(pctx, "authorization", "Bearer "+c.opts.Token)
	}
	pctx, err = c.opts.Endpoints.SignPlan(pctx, c.opts.Endpoints.Catalog, req)
	if err != nil {
		return nil, fmt.Errorf("sign the plan request: %w", err)
	}
	return pushdown_pb.NewPushdownCatalogClient(conn).Plan(pctx, req)
}

// plain reads with iceberg-go's own scan through the S3 gateway (its
// files through rangedIO), or with the connector's decoder when some file
// stores a needed column iceberg-go cannot project (plaindecode.go).
func (c *Connector) plain(ctx context.Context, p *prepared, reason string) (*Result, error) {
	t0 := time.Now()
	tbl, opened := c.plainTable(ctx, p)
	tasks, err := c.plainTasks(ctx, p, tbl)
	if err != nil {
		return nil, err
	}
	if files, err := c.ownDecoderFiles(ctx, p, tasks); err != nil {
		return nil, err
	} else if files != nil {
		return c.plainDecoded(ctx, p, files, reason, t0)
	}
	if p.identity.any(p.selectIDsAndPredicate()) {
		return c.plainWithConstants(ctx, p, tbl, tasks, reason, t0)
	}
	var names []string
	for _, id := range p.selectIDs {
		n, _ := p.schema.FindColumnName(id)
		names = append(names, n)
	}
	opts := []table.ScanOption{table.WithRowFilter(p.unbound), table.WithSelectedFields(names...), table.WithCaseSensitive(true)}
	if p.snapshot != 0 {
		opts = append(opts, table.WithSnapshotID(p.snapshot))
	}
	if p.q.Limit > 0 {
		opts = append(opts, table.WithLimit(p.q.Limit))
	}
	sch, records, err := tbl.Scan(opts...).ReadTasks(ctx, tasks)
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		// iceberg-go cannot evaluate part of the predicate (starts_with):
		// scan unfiltered and evaluate the predicate here.
		return c.plainFiltered(ctx, p, tbl, tasks, opened, reason, t0)
	}
	if err != nil {
		return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
	}
	// iceberg-go projects in schema order; the result is in SELECT order
	perm := selectPermutation(sch, p)
	res := &Result{Schema: permuteSchema(sch, perm), Stats: Stats{FallbackReason: reason}}
	first := true
	for rec, err := range records {
		if err != nil {
			if first && strings.Contains(err.Error(), "not implemented") {
				return c.plainFiltered(ctx, p, tbl, tasks, opened, reason, t0)
			}
			return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
		}
		first = false
		done, err := p.q.out.add(permuteRecord(rec, perm))
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	res.Stats.Files = opened.count(tasks)
	res.Stats.ReadMs = time.Since(t0).Milliseconds()
	return res, nil
}

// selectPermutation lists, for each selected column in SELECT order, the
// column of sch holding it (sch: iceberg-go's projection, in schema
// order, nested selections as their top-level struct; a column selected
// twice comes out twice, as pushdown reads give it). nil: sch already is
// in that order, or the columns do not match by name.
func selectPermutation(sch *arrow.Schema, p *prepared) []int {
	var perm []int
	seen := map[int]bool{}
	for _, id := range p.selectIDs {
		for a, ok := p.parents[id]; ok; a, ok = p.parents[a] {
			id = a
		}
		name, _ := p.schema.FindColumnName(id)
		idx := sch.FieldIndices(name)
		if len(idx) != 1 {
			return nil
		}
		seen[idx[0]] = true
		perm = append(perm, idx[0])
	}
	if len(seen) != sch.NumFields() {
		return nil
	}
	if len(perm) != sch.NumFields() {
		return perm
	}
	for i, j := range perm {
		if i != j {
			return perm
		}
	}
	return nil
}

func permuteSchema(sch *arrow.Schema, perm []int) *arrow.Schema {
	if perm == nil {
		return sch
	}
	fields := make([]arrow.Field, len(perm))
	for i, j := range perm {
		fields[i] = sch.Field(j)
	}
	md := sch.Metadata()
	return arrow.NewSchema(fields, &md)
}

// permuteRecord reorders rec's columns (see selectPermutation), releasing
// rec.
func permuteRecord(rec arrow.RecordBatch, perm []int) arrow.RecordBatch {
	if perm == nil {
		return rec
	}
	cols := make([]arrow.Array, len(perm))
	for i, j := range perm {
		cols[i] = rec.Column(j)
	}
	reordered := array.NewRecordBatch(permuteSchema(rec.Schema(), perm), cols, rec.NumRows())
	rec.Release()
	return reordered
}

// plainFiltered reads with iceberg-go's scan without a row filter and
// keeps the rows the predicate matches.
func (c *Connector) plainFiltered(ctx context.Context, p *prepared, tbl *table.Table, tasks []table.FileScanTask, opened *openedFiles, reason string, t0 time.Time) (*Result, error) {
	ids := append(append([]int{}, p.selectIDs...), predicate.FieldIDs(p.expr)...)
	var names []string
	seen := map[string]bool{}
	for _, id := range ids {
		n, _ := p.schema.FindColumnName(id)
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	opts := []table.ScanOption{table.WithSelectedFields(names...), table.WithCaseSensitive(true)}
	if p.snapshot != 0 {
		opts = append(opts, table.WithSnapshotID(p.snapshot))
	}
	_, records, err := tbl.Scan(opts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
	}
	f := newFiltered(p, reason)
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
		}
		done, err := f.add(ctx, rec)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	res := f.finish(t0)
	res.Stats.Files = opened.count(tasks)
	return res, nil
}

// filtered hands on a plain read whose predicate is evaluated here: the
// matching rows of each record, projected, up to the LIMIT.
type filtered struct {
	p         *prepared
	res       *Result // schema and statistics
	remaining int64
}

func newFiltered(p *prepared, reason string) *filtered {
	return &filtered{p: p, res: &Result{Stats: Stats{FallbackReason: reason}}, remaining: p.q.Limit}
}

// add hands on rec's matching rows (releasing rec); done: the LIMIT is
// reached.
func (f *filtered) add(ctx context.Context, rec arrow.RecordBatch) (done bool, err error) {
	out, err := filterRecord(ctx, rec, f.p, f.remaining)
	rec.Release()
	if err != nil {
		return false, err
	}
	if f.res.Schema == nil {
		f.res.Schema = out.Schema()
	} else if conformed, err := conform(ctx, out, f.res.Schema); err != nil {
		out.Release()
		return false, err
	} else {
		out = conformed
	}
	n := out.NumRows()
	if done, err := f.p.q.out.add(out); done || err != nil {
		return done, err
	}
	if f.p.q.Limit > 0 {
		f.remaining -= n
		return f.remaining <= 0, nil
	}
	return false, nil
}

func (f *filtered) finish(t0 time.Time) *Result {
	if f.res.Schema == nil {
		f.res.Schema = emptySchema(f.p)
	}
	f.res.Stats.ReadMs = time.Since(t0).Milliseconds()
	return f.res
}

// filterRecord keeps the rows of rec matching the predicate (IEEE) and
// projects the SELECT columns, up to limit rows (0: no limit).
func filterRecord(ctx context.Context, rec arrow.RecordBatch, p *prepared, limit int64) (arrow.RecordBatch, error) {
	byName := map[string]int{}
	for i, f := range rec.Schema().Fields() {
		byName[f.Name] = i
	}
	f := &colfilter.Filter{Expr: p.expr}
	sel, err := f.SelectRows(recordBatch(rec, p.schema, p.q.Table))
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(sel)) > limit {
		sel = sel[:limit]
	}
	idx := array.NewInt64Builder(memory.DefaultAllocator)
	defer idx.Release()
	for _, r := range sel {
		idx.Append(int64(r))
	}
	indices := idx.NewArray()
	defer indices.Release()
	var fields []arrow.Field
	var cols []arrow.Array
	for _, id := range p.selectIDs {
		name, _ := p.schema.FindColumnName(id)
		col, ok := byName[name]
		if !ok {
			continue
		}
		taken, err := compute.TakeArray(ctx, rec.Column(col), indices)
		if err != nil {
			return nil, err
		}
		fields = append(fields, rec.Schema().Field(col))
		cols = append(cols, taken)
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(indices.Len()))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// Explain plans q without reading data.
// A vector query's plan runs its search (the plan is its answer).
func (c *Connector) Explain(ctx context.Context, q Query) (*pushdown_pb.ParquetPushdownResponse, error) {
	if q.Vector != nil {
		if err := checkVectorQuery(q); err != nil {
			return nil, err
		}
		p, _, err := c.prepareVector(ctx, q, false)
		if err != nil {
			return nil, err
		}
		return c.plan(ctx, p.req)
	}
	_, resp, err := c.wholePlan(ctx, q)
	return resp, err
}

// wholePlan plans every file of q (decide early off: an explanation, a
// count from the plan and the volumes' aggregates all need every file's
// row groups), bound to the table's cached metadata when the catalog
// planned that version, else to the current one. p is nil when q does not
// bind (err says why); with p, err is the catalog's.
func (c *Connector) wholePlan(ctx context.Context, q Query) (*prepared, *pushdown_pb.ParquetPushdownResponse, error) {
	p, err := c.prepare(ctx, q, !c.opts.ClientResolved)
	if err != nil {
		return nil, nil, err
	}
	p.req.DecideEarly = false
	p, resp, err, bindErr := c.planCurrent(ctx, p, func() (*prepared, error) {
		p, err := c.prepare(ctx, p.q, false)
		if p != nil {
			p.req.DecideEarly = false
		}
		return p, err
	})
	if bindErr != nil {
		return nil, nil, bindErr
	}
	return p, resp, err
}
