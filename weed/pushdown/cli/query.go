package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"golang.org/x/term"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

const querySupported = sqlstmt.Supported

func init() {
	register(&subcommand{
		name: "query",
		short: `Run a SELECT against a table: plan with the catalog pushdown service, read only the planned byte
ranges from the volume pushdown service holding each file (or through the S3 gateway), decode them with arrow-go, filter, project. Falls back to a plain read
(iceberg-go's scan) when pushdown is unavailable or not worth it.`,
		usage: `-sql "SELECT … FROM ns.table [WHERE …] [GROUP BY …] [HAVING …] [ORDER BY … | embedding <-> '[…]'] [LIMIT n] [OFFSET m]" [-format table|csv|json] [-explain] [-stats] [-no-pushdown] [-force] [-mode page|rowgroup] [-read auto|volume|s3] [-filterAt auto|here|volume] [-aggregateAt auto|here|volume] [-nprobe n]`,
		run:   runQuery,
	})
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
	aggregateAt := fs.String("aggregateAt", "auto", "where a GROUP BY's COUNT, SUM, MIN, MAX and AVG are computed: auto (on the volume pushdown services holding the files, which send a row per group, unless a predicate would be evaluated there row by row on this host), volume (there whenever they can) or here (every matching row read here); files a volume cannot aggregate, or whose call fails, are read here")
	rangeCacheMB := fs.Int("rangeCacheMB", 16, "file bytes kept for reuse by the query's later reads (0: none); larger helps only processes that run many queries")
	pageCacheMB := fs.Int("pageCacheMB", 0, "zstd pages kept decoded for the query's later reads of them (0: none); larger helps only processes that run many queries")
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
	aa, err := connector.ParseAggregateSite(*aggregateAt)
	if err != nil {
		return fmt.Errorf("-aggregateAt: %w", err)
	}
	if *maxBufferMB < 1 || *workers < 0 || *volumeRowsMinKB < 0 || *volumeRowsMinKB > 1<<20 || *rangeCacheMB < 0 || *pageCacheMB < 0 {
		return fmt.Errorf("-maxBufferMB must be at least 1, -workers, -rangeCacheMB and -pageCacheMB at least 0 and -volumeRowsMinKB from 0 to 1048576")
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
	pageCache := int64(*pageCacheMB) << 20
	if pageCache == 0 {
		pageCache = -1 // Options: negative keeps none
	}
	minVolumeRows := int64(*volumeRowsMinKB) << 10
	if minVolumeRows == 0 {
		minVolumeRows = -1 // Options: negative asks the volume however small
	}
	st, err := sqlstmt.Parse(*sql)
	if err != nil {
		return err
	}
	if st.Params > 0 {
		return fmt.Errorf("SQL: the statement has %d parameters ($n or ?); write the values in the query (parameters are bound by Flight SQL prepared statements)", st.Params)
	}
	if *nprobe < 0 {
		return fmt.Errorf("-nprobe %d is negative", *nprobe)
	}
	util.LoadSecurityConfiguration()
	ctx := context.Background()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	opts := connector.Options{Endpoints: e, Mode: m, NoPushdown: *noPushdown, NoFallback: *noFallback, Force: *force,
		MaxBufferBytes: int64(*maxBufferMB) << 20, Workers: *workers, Read: rp, FilterAt: fa, NoVolumeRows: !*volumeRows,
		VolumeRowsMinBytes: minVolumeRows, RangeCacheBytes: rangeCache, PageCacheBytes: pageCache}
	bar := newProgress()
	opts.Progress = bar.update
	conn, err := connector.New(ctx, opts)
	if err != nil {
		return err
	}
	defer conn.Close()
	eo := sqlexec.Options{Snapshot: *snapshot, Nprobe: *nprobe, NoMetadataAnswers: *noPushdown, AggregateAt: aa}
	if *explain {
		cq := sqlexec.ConnectorQuery(st, eo)
		resp, err := conn.Explain(ctx, cq)
		if err != nil {
			return err
		}
		PrintPlan(os.Stdout, st.Table, st.Where, resp)
		if st.Where != "" {
			PrintFilterSites(os.Stdout, connector.ExplainFilterSites(resp, fa, cq.Limit))
		}
		return nil
	}
	rw := newRowWriter(os.Stdout, *format)
	res, err := sqlexec.Run(ctx, conn, st, eo, rw.write)
	bar.finish()
	if err != nil {
		_ = rw.w.Flush() // the rows written so far, then the error
		return err
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
