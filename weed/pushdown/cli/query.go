package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/schollz/progressbar/v3"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/parser"
	"github.com/seaweedfs/cockroachdb-parser/pkg/sql/sem/tree"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"golang.org/x/term"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

const querySupported = `supported: SELECT <columns | *> FROM namespace.table [WHERE <predicate>] [ORDER BY <vector column> <-> | <=> | <#> '[x, y, …]' ] [LIMIT n] [OFFSET m]`

func init() {
	register(&subcommand{
		name: "query",
		short: `Run a SELECT against a table: plan with the catalog pushdown service, read only the planned byte
ranges from the volume pushdown service holding each file (or through the S3 gateway), decode them with arrow-go, filter, project. Falls back to a plain read
(iceberg-go's scan) when pushdown is unavailable or not worth it.`,
		usage: `-sql "SELECT … FROM ns.table [WHERE …] [ORDER BY embedding <-> '[…]'] [LIMIT n] [OFFSET m]" [-format table|csv|json] [-explain] [-stats] [-no-pushdown] [-force] [-mode page|rowgroup] [-read auto|volume|s3] [-filterAt auto|here|volume] [-nprobe n]`,
		run:   runQuery,
	})
}

// ParsedQuery is a SELECT the query command understands.
type ParsedQuery struct {
	Table  string
	Select []string // nil: every column
	Where  string
	Limit  int64 // 0: none (see NoRows)
	Offset int64
	// NoRows: LIMIT 0, an answer of no rows (its columns only).
	NoRows bool
	// Vector: ORDER BY a vector distance (then Limit is k, and Select may
	// name connector.DistanceColumn).
	Vector *sqlpred.VectorOrder
}

// ParseSelect parses the supported SELECT subset.
func ParseSelect(sql string) (*ParsedQuery, error) {
	stmts, err := parser.Parse(sql)
	if err != nil {
		return nil, fmt.Errorf("SQL: %v (%s)", err, querySupported)
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("SQL: one statement expected, got %d (%s)", len(stmts), querySupported)
	}
	sel, ok := stmts[0].AST.(*tree.Select)
	if !ok {
		return nil, fmt.Errorf("SQL: %T is not supported (%s)", stmts[0].AST, querySupported)
	}
	clause, ok := sel.Select.(*tree.SelectClause)
	if !ok {
		return nil, fmt.Errorf("SQL: %s is not supported (%s)", tree.AsString(sel.Select), querySupported)
	}
	if clause.Distinct || len(clause.GroupBy) > 0 || clause.Having != nil || clause.Window != nil {
		return nil, fmt.Errorf("SQL: DISTINCT, GROUP BY, HAVING and windows are not supported (%s)", querySupported)
	}
	if len(clause.From.Tables) != 1 {
		return nil, fmt.Errorf("SQL: exactly one table in FROM (%s)", querySupported)
	}
	ate, ok := clause.From.Tables[0].(*tree.AliasedTableExpr)
	if !ok {
		return nil, fmt.Errorf("SQL: FROM %s is not supported (%s)", tree.AsString(clause.From.Tables[0]), querySupported)
	}
	tn, ok := ate.Expr.(*tree.TableName)
	if !ok || !tn.ExplicitSchema {
		return nil, fmt.Errorf("SQL: FROM needs namespace.table, got %s", tree.AsString(ate.Expr))
	}
	q := &ParsedQuery{Table: string(tn.SchemaName) + "." + string(tn.ObjectName)}
	if tn.ExplicitCatalog {
		q.Table = string(tn.CatalogName) + "." + q.Table
	}
	for _, se := range clause.Exprs {
		switch x := se.Expr.(type) {
		case tree.UnqualifiedStar:
			q.Select = nil
		case *tree.UnresolvedName:
			if x.Star {
				q.Select = nil
				continue
			}
			var parts []string
			for i := x.NumParts - 1; i >= 0; i-- {
				parts = append(parts, x.Parts[i])
			}
			q.Select = append(q.Select, strings.Join(parts, "."))
		default:
			return nil, fmt.Errorf("SQL: select item %s is not a column (%s)", tree.AsString(se.Expr), querySupported)
		}
	}
	if clause.Where != nil {
		q.Where = tree.AsString(clause.Where.Expr)
	}
	if sel.Limit != nil && sel.Limit.Count != nil {
		n, err := strconv.ParseInt(tree.AsString(sel.Limit.Count), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("SQL: LIMIT %s is not a non-negative integer", tree.AsString(sel.Limit.Count))
		}
		q.Limit, q.NoRows = n, n == 0
	}
	if sel.Limit != nil && sel.Limit.Offset != nil {
		n, err := strconv.ParseInt(tree.AsString(sel.Limit.Offset), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("SQL: OFFSET %s is not a non-negative integer", tree.AsString(sel.Limit.Offset))
		}
		q.Offset = n
	}
	if len(sel.OrderBy) > 0 {
		if err := parseVectorOrder(sel, q); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// parseVectorOrder reads ORDER BY <column> <distance operator> <vector>,
// which needs a LIMIT of 1 to connector.MaxVectorK.
func parseVectorOrder(sel *tree.Select, q *ParsedQuery) error {
	if len(sel.OrderBy) != 1 {
		return fmt.Errorf("SQL: ORDER BY takes one vector distance, got %d terms (%s)", len(sel.OrderBy), sqlpred.VectorSupported)
	}
	o := sel.OrderBy[0]
	if o.OrderType != tree.OrderByColumn {
		return fmt.Errorf("SQL: ORDER BY %s is not supported (%s)", tree.AsString(o), sqlpred.VectorSupported)
	}
	if !sqlpred.IsVectorDistance(o.Expr) {
		return fmt.Errorf("SQL: ORDER BY %s: sorting rows by a column is not supported; rows come in the table's file order. "+
			"Drop ORDER BY (and sort the output, e.g. -format csv | sort), or order by a vector distance: %s",
			perr.Truncate(tree.AsString(o), 64), sqlpred.VectorSupported)
	}
	if o.Direction == tree.Descending || o.NullsOrder != tree.DefaultNullsOrder {
		return fmt.Errorf("SQL: ORDER BY a vector distance is ascending (nearest first); DESC and NULLS FIRST/LAST are not supported (%s)", sqlpred.VectorSupported)
	}
	vo, err := sqlpred.ParseVectorOrder(o.Expr)
	if err != nil {
		return fmt.Errorf("SQL: %w", err)
	}
	if sel.Limit == nil || sel.Limit.Count == nil {
		return fmt.Errorf("SQL: ORDER BY %s %s needs LIMIT k (1 to %d): a vector query returns the k nearest rows", vo.Column, vo.Metric.Operator(), connector.MaxVectorK)
	}
	if sel.Limit.Offset != nil {
		return fmt.Errorf("SQL: OFFSET is not supported with ORDER BY a vector distance (%s)", sqlpred.VectorSupported)
	}
	if q.Limit < 1 || q.Limit > connector.MaxVectorK {
		return fmt.Errorf("SQL: LIMIT %d with ORDER BY a vector distance: want 1 to %d", q.Limit, connector.MaxVectorK)
	}
	q.Vector = vo
	return nil
}

func runQuery(args []string) error {
	fs := newFlags(subcommands["query"])
	sql := fs.String("sql", "", "SELECT statement")
	format := fs.String("format", "table", "output format: table, csv or json (one object per line)")
	explain := fs.Bool("explain", false, "print the plan and per-tier pruning; read no data")
	stats := fs.Bool("stats", false, "end stderr with one JSON line of figures (rows, bytes read, ranges, time per stage)")
	noPushdown := fs.Bool("no-pushdown", false, "read plainly through S3 (iceberg-go's scan), for comparison")
	mode := fs.String("mode", "page", "decoding: page (only planned pages) or rowgroup (whole row groups)")
	noFallback := fs.Bool("no-fallback", false, "fail instead of reading plainly when pushdown is unavailable")
	force := fs.Bool("force", false, "push down even when the cost model advises against it")
	snapshot := fs.Int64("snapshot", 0, "snapshot id (default: current)")
	maxBufferMB := fs.Int("maxBufferMB", 64, "bytes of row groups read ahead of the one the output waits for (at least one row group is always read); the process keeps its heap near twice this plus 256 MB (unless GOMEMLIMIT says otherwise)")
	workers := fs.Int("workers", 0, "row groups decoded and filtered at once (default: one per core)")
	nprobe := fs.Int("nprobe", 0, "vector queries: IVF lists probed per file at least (default: each index's own)")
	readPath := fs.String("read", "auto", "where planned bytes are read: auto (from the volume pushdown service holding each file, through the S3 gateway where there is none or it fails), volume (only there) or s3")
	volumeRows := fs.Bool("volumeRows", true, "rows that side indexes name exactly (a few per row group) are decoded by the volume pushdown service holding the file and sent as rows, not read here as pages")
	filterAt := fs.String("filterAt", "auto", "where the predicate of row groups side indexes did not answer exactly is evaluated: auto (per row group by the cost model: bytes of the planned pages against the Arrow bytes of the rows expected to match, holder on this host or not), here (read the pages here) or volume (the volume pushdown service holding the file decodes, filters and sends only the matching rows; any failure reads the pages here)")
	rangeCacheMB := fs.Int("rangeCacheMB", 16, "file bytes kept for reuse by the query's later reads (0: none); larger helps only processes that run many queries")
	volumeRowsMinKB := fs.Int("volumeRowsMinKB", 64, "exact rows whose row group's planned pages are at most this many KB are read here as pages (cached for the next query) instead; 0 asks the volume however small")
	endpoints := endpointFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sql == "" {
		return fmt.Errorf("-sql is required (%s)", querySupported)
	}
	switch *format {
	case "table", "csv", "json":
	default:
		return fmt.Errorf("-format %q: want table, csv or json", *format)
	}
	m := connector.PageAware
	switch *mode {
	case "page":
	case "rowgroup":
		m = connector.RowGroup
	default:
		return fmt.Errorf("-mode %q: want page or rowgroup", *mode)
	}
	rp, err := connector.ParseReadPath(*readPath)
	if err != nil {
		return fmt.Errorf("-read: %w", err)
	}
	fa, err := connector.ParseFilterSite(*filterAt)
	if err != nil {
		return fmt.Errorf("-filterAt: %w", err)
	}
	if *maxBufferMB < 1 || *workers < 0 || *volumeRowsMinKB < 0 || *volumeRowsMinKB > 1<<20 || *rangeCacheMB < 0 {
		return fmt.Errorf("-maxBufferMB must be at least 1, -workers and -rangeCacheMB at least 0 and -volumeRowsMinKB from 0 to 1048576")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Rows are written as they are read: the heap holds the read-ahead
		// and the row groups being decoded. A soft limit keeps the
		// collector from letting freed buffers pile up between cycles.
		debug.SetMemoryLimit(2*int64(*maxBufferMB)<<20 + 256<<20)
	}
	rangeCache := int64(*rangeCacheMB) << 20
	if rangeCache == 0 {
		rangeCache = -1 // Options: negative keeps none
	}
	minVolumeRows := int64(*volumeRowsMinKB) << 10
	if minVolumeRows == 0 {
		minVolumeRows = -1 // Options: negative asks the volume however small
	}
	q, err := ParseSelect(*sql)
	if err != nil {
		return err
	}
	util.LoadSecurityConfiguration()
	ctx := context.Background()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	opts := connector.Options{Endpoints: e, Mode: m, NoPushdown: *noPushdown, NoFallback: *noFallback, Force: *force,
		MaxBufferBytes: int64(*maxBufferMB) << 20, Workers: *workers, Read: rp, FilterAt: fa, NoVolumeRows: !*volumeRows,
		VolumeRowsMinBytes: minVolumeRows, RangeCacheBytes: rangeCache}
	bar := newProgress()
	opts.Progress = bar.update
	conn, err := connector.New(ctx, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	cq := connector.Query{Table: q.Table, Snapshot: *snapshot, Where: q.Where, Select: q.Select, Limit: q.Limit}
	if q.Vector != nil {
		if *nprobe < 0 {
			return fmt.Errorf("-nprobe %d is negative", *nprobe)
		}
		cq.Vector = &connector.VectorQuery{Column: q.Vector.Column, Metric: vector.Metric(q.Vector.Metric), Vector: q.Vector.Vector, Nprobe: *nprobe}
	}
	if *explain {
		resp, err := conn.Explain(ctx, cq)
		if err != nil {
			return err
		}
		PrintPlan(os.Stdout, q.Table, q.Where, resp)
		if q.Where != "" {
			PrintFilterSites(os.Stdout, connector.ExplainFilterSites(resp, fa, cq.Limit))
		}
		return nil
	}
	cq.Offset = q.Offset
	rw := newRowWriter(os.Stdout, *format)
	sink := rw.write
	if q.NoRows {
		// LIMIT 0: the columns of an answer without rows
		cq.Limit, cq.Offset = 1, 0
		sink = func(arrow.RecordBatch) error { return nil }
	}
	res, err := conn.Stream(ctx, cq, sink)
	bar.finish()
	if err != nil {
		_ = rw.w.Flush() // the rows written so far, then the error
		return err
	}
	if q.NoRows {
		res.Stats.Rows = 0
	}
	if err := rw.finish(res.Schema); err != nil {
		return err
	}
	if *stats {
		b, _ := json.Marshal(res.Stats)
		fmt.Fprintln(os.Stderr, string(b))
	}
	return nil
}

// progress draws a bar on stderr for reads longer than a second, when
// stderr is a terminal.
type progress struct {
	mu      sync.Mutex
	start   time.Time
	bar     *progressbar.ProgressBar
	enabled bool
}

func newProgress() *progress {
	return &progress{start: time.Now(), enabled: term.IsTerminal(int(os.Stderr.Fd()))}
}

func (p *progress) update(done, total int) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		if time.Since(p.start) < time.Second {
			return
		}
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("reading files"),
			progressbar.OptionClearOnFinish())
	}
	_ = p.bar.Set(done)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
