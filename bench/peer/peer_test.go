// Package peer compares three readers of the same `weed pushdown demo`
// tables in one run, side by side:
//
//	a. the lakeweed connector with pushdown (plan → planned ranges via S3)
//	b. iceberg-go's own scan through the S3 gateway (row-group stats + bloom)
//	c. DuckDB (duckdb-go, embedded) reading the Parquet files through `weed mount`
//
// for a point lookup on the unclustered id, a 1% ts range, tenant_id and
// status equality, a two-column full scan and a LIMIT 10 of the status
// equality, on tables written with page indexes and bloom filters in all,
// half and none of the files, and the point lookup and status equality on
// a big table (10M rows, page indexes and blooms in all files). Beside
// wall time it reports the CPU each query costs: this process's (the
// connector, iceberg-go and the embedded DuckDB all run here; getrusage)
// plus the cluster's and, for DuckDB, weed mount's (/proc/<pid>/stat).
// It lives in its own module so the main build stays pure Go. Run with
// `make bench`.
//
//	load tables ─▶ per table, per query: a, b, c (cold, 1 untimed warm-up, 5 warm; CPU deltas)
//	           ─▶ agreement check ─▶ bench/results/peer.{json,md}
//	           ─▶ (full run) scripts/readme-peer-table.sh ─▶ README.md
package peer

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/bench/benchutil/kindq"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

type query struct {
	name   string
	where  string
	sel    []string
	duckdb string // WHERE clause in DuckDB's dialect (same meaning)
	limit  int64  // 0: every matching row
}

func queries(rows int64) []query {
	start := demo.DefaultSpec().StartTime
	span := time.Duration(rows) * 250 * time.Millisecond
	from := start.Add(span / 2)
	to := from.Add(span / 100)
	ts := func(t time.Time) string { return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'" }
	rng := fmt.Sprintf("ts >= %s AND ts < %s", ts(from), ts(to))
	id := fmt.Sprintf("id = %d", rows/3)
	return []query{
		{"point lookup id", id, []string{"id", "tenant_id", "status", "message"}, id, 0},
		{"1% ts range", rng, []string{"id", "ts", "message"}, rng, 0},
		{"tenant_id equality", "tenant_id = 'tenant-042'", []string{"id", "tenant_id", "status"}, "tenant_id = 'tenant-042'", 0},
		{"status equality", "status = 'error'", []string{"id", "status"}, "status = 'error'", 0},
		{"full scan of two columns", "", []string{"id", "ts"}, "", 0},
		{"LIMIT 10 of status equality", "status = 'error'", []string{"id", "status"}, "status = 'error'", 10},
	}
}

// bigQueries are the shapes measured on the big table: the point lookup
// and the unselective status equality.
func bigQueries(rows int64) []query {
	qs := queries(rows)
	return []query{qs[0], qs[3]}
}

type measurement struct {
	Rows  int64 `json:"rows"`
	IDSum int64 `json:"id_sum"`
	// SeaweedFS-side: S3 bytes sent (a, b) plus the bytes volume pushdown
	// services sent the connector (a), volume bytes read by weed mount (c)
	Bytes  int64   `json:"bytes_read"`
	ColdMs float64 `json:"cold_ms"`
	WarmMs float64 `json:"warm_median_ms"`
	// CPU per warm query, the mean over the warm runs: this process
	// (reader), the cluster (weed mini) and weed mount (c only).
	WarmCPUReaderMs float64 `json:"warm_cpu_reader_ms"`
	WarmCPUServerMs float64 `json:"warm_cpu_servers_ms"`
	Pushdown        bool    `json:"pushdown,omitempty"`
	Fallback        string  `json:"fallback_reason,omitempty"`
	Reader          string  `json:"reader"`
	Indexed         string  `json:"indexed"` // the table: its mode, and its rows when not the base size
	Query           string  `json:"query"`
	Error           string  `json:"error,omitempty"`
}

// peerTable is one table the benchmark loads and queries.
type peerTable struct {
	label   string // the "indexed" column: mode, plus rows when not the base size
	name    string // namespace.table
	rows    int64
	queries []query
}

func TestPeerBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (LAKEWEED_BENCH=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("weed mount (FUSE) needs root here")
	}
	started := time.Now()
	loadAtStart := benchutil.LoadAverage()
	metricsPort := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-metricsPort=" + strconv.Itoa(metricsPort)}})
	ctx := context.Background()
	rows := int64(envInt("LAKEWEED_BENCH_ROWS", 1_000_000))
	var tables []peerTable
	load := func(name string, spec demo.Spec) string {
		t0 := time.Now()
		res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("loaded %s: %d rows in %d files, %d bytes, in %s", name, spec.Rows, spec.Files, res.Bytes, time.Since(t0).Round(time.Second))
		return res.Location
	}
	locations := map[string]string{}
	for _, mode := range peerModes() {
		idx := demo.Indexed(mode)
		if mode == sideMode {
			idx = demo.IndexedNone // the files of "none", with side indexes
		}
		spec := demo.DefaultSpec()
		spec.Rows, spec.Indexed = rows, idx
		name := "peer." + mode
		locations[name] = load(name, spec)
		if mode == sideMode {
			createSideIndexes(t, c, name)
		}
		tables = append(tables, peerTable{label: mode, name: name, rows: rows, queries: queries(rows)})
	}
	if big, files := bigTable(); big > 0 {
		spec := demo.DefaultSpec()
		spec.Rows, spec.Files, spec.Indexed = big, files, demo.IndexedAll
		const name = "peer.big"
		locations[name] = load(name, spec)
		tables = append(tables, peerTable{label: "all, " + shortCount(big) + " rows", name: name, rows: big, queries: bigQueries(big)})
	}

	mnt := filepath.Join(c.Dir, "mnt")
	_ = os.MkdirAll(mnt, 0o755)
	var mount *harness.Process
	generation := 0
	// remount gives DuckDB a cold start: a new weed mount process (empty
	// chunk cache) and a new FUSE superblock (empty page cache).
	remount := func() {
		if mount != nil {
			_ = mount.Stop(10 * time.Second)
			_ = exec("umount", "-l", mnt)
		}
		generation++
		mount = harness.StartProcess(t, c.Dir, fmt.Sprintf("mount%d", generation), nil, "mount", "-filer="+c.FilerGrpcAddress(), "-dir="+mnt,
			"-filer.path="+benchutil.BucketSafeMountPath(c.Warehouse, "peer"), "-readOnly", "-cacheDir="+filepath.Join(c.Dir, fmt.Sprintf("mountcache%d", generation)))
		benchutil.WaitMounted(t, mnt)
		if duck != nil {
			duck.Close()
			duck = nil
		}
	}
	remount()
	t.Cleanup(func() { _ = exec("umount", "-l", mnt) })

	s3Sent := func() int64 {
		return scrape(t, metricsPort, `SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket="warehouse"}`)
	}
	mountRead := func() int64 { return procIO(mount.Cmd.Process.Pid, "rchar") }
	clusterCPU := func() time.Duration { return benchutil.ProcCPU(c.Proc.Cmd.Process.Pid) }
	clusterAndMountCPU := func() time.Duration { return clusterCPU() + benchutil.ProcCPU(mount.Cmd.Process.Pid) }

	var results []measurement
	for _, tb := range tables {
		dir := filepath.Join(mnt, strings.TrimPrefix(locations[tb.name], "s3://warehouse/peer/"), "data")
		for _, q := range tb.queries {
			// a. connector with pushdown
			results = append(results, run(t, "a. lakeweed connector (pushdown)", tb.label, q.name, s3Sent, clusterCPU, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				conn := connectorFor(t, c, fresh)
				if fresh {
					// a cold run's connector is closed after it, not left
					// holding connections under the queries measured next
					defer conn.Close()
				}
				res, err := conn.Query(ctx, connector.Query{Table: tb.name, Where: q.where, Select: q.sel, Limit: q.limit})
				if err != nil {
					return 0, 0, err
				}
				defer res.Release()
				*st = res.Stats
				return sumIDs(res)
			}))
			// b. iceberg-go scan through the S3 gateway
			results = append(results, run(t, "b. iceberg-go scan", tb.label, q.name, s3Sent, clusterCPU, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				return icebergScan(ctx, t, c, tb.name, q)
			}))
			// c. DuckDB over weed mount
			remount()
			results = append(results, run(t, "c. DuckDB via weed mount", tb.label, q.name, mountRead, clusterAndMountCPU, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				return duckScan(dir, q)
			}))
			checkAgreement(t, results[len(results)-3:], q.limit)
		}
	}
	write(t, tables, results, runInfo{started: started, loadAtStart: loadAtStart, loadAtEnd: benchutil.LoadAverage(), rows: rows})
}

// bigTable is the rows and files of the big table: LAKEWEED_PEER_BIG_ROWS
// (default 10,000,000; 0 skips it, as LAKEWEED_BENCH_QUICK does) in
// LAKEWEED_PEER_BIG_FILES files (default: 125,000 rows a file, as the
// base tables have).
func bigTable() (rows int64, files int) {
	rows = 10_000_000
	if v := os.Getenv("LAKEWEED_PEER_BIG_ROWS"); v != "" {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	if os.Getenv("LAKEWEED_BENCH_QUICK") != "" || rows <= 0 {
		return 0, 0
	}
	files = envInt("LAKEWEED_PEER_BIG_FILES", int(max(1, rows/125_000)))
	return rows, files
}

// shortCount writes n as 10M, 250k or 1234.
func shortCount(n int64) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	}
	return strconv.FormatInt(n, 10)
}

// sideMode is the table written like "none" (no page index, no bloom
// filters) with side indexes built beside it: btree(id), bloom(tenant_id),
// bitmap(tenant_id), bitmap(status) and page_index on every column the
// queries read.
const sideMode = "side"

// peerModes are the tables measured: all, half, none and side, or the
// comma-separated list in LAKEWEED_PEER_MODES.
func peerModes() []string {
	if v := os.Getenv("LAKEWEED_PEER_MODES"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"all", "half", "none", sideMode}
}

func createSideIndexes(t *testing.T, c *harness.Cluster, name string) {
	kindq.CreateIndexes(t, c, name, [2]string{"id", "btree"}, [2]string{"tenant_id", "bloom"}, [2]string{"tenant_id", "bitmap"}, [2]string{"status", "bitmap"}, [2]string{"id", "page_index"},
		[2]string{"ts", "page_index"}, [2]string{"tenant_id", "page_index"}, [2]string{"status", "page_index"}, [2]string{"message", "page_index"})
}

var conns = map[bool]*connector.Connector{}

func connectorFor(t *testing.T, c *harness.Cluster, fresh bool) *connector.Connector {
	if fresh || conns[false] == nil {
		conn, err := connector.New(context.Background(), connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if !fresh {
			conns[false] = conn
		}
		return conn
	}
	return conns[false]
}

// run measures one reader on one query: a cold run (fresh reader state) and,
// after one untimed warm-up run, the median of five warm runs; bytes are the SeaweedFS-side counter delta
// of the cold run (plus, for the connector, what volume pushdown services
// sent it); CPU is the mean over the warm runs of this process's CPU
// (getrusage) and of the servers' (servers: the cluster's, and weed
// mount's for DuckDB).
func run(t *testing.T, reader, idx, qname string, counter func() int64, servers func() time.Duration, fn func(fresh bool, st *connector.Stats) (int64, int64, error)) measurement {
	m := measurement{Reader: reader, Indexed: idx, Query: qname}
	var st connector.Stats
	before := counter()
	t0 := time.Now()
	n, sum, err := fn(true, &st)
	m.ColdMs = float64(time.Since(t0).Microseconds()) / 1000
	m.Bytes = counter() - before + st.BytesVolume
	if err != nil {
		m.Error = err.Error()
		t.Logf("%s %s %s: %v", reader, idx, qname, err)
		return m
	}
	m.Rows, m.IDSum, m.Pushdown, m.Fallback = n, sum, st.Pushdown, st.FallbackReason
	const warmRuns = 5
	var warm []float64
	// one untimed run on the warm reader first, for every reader alike: the
	// cold run warmed a reader of its own (a fresh connector) or the mount
	// (DuckDB), so the warm reader's first run of this query is not warm
	if _, _, err := fn(false, &st); err != nil {
		m.Error = err.Error()
		t.Logf("%s %s %s: warm-up: %v", reader, idx, qname, err)
		return m
	}
	runtime.GC() // the garbage of earlier readers is not this one's CPU
	cpu0, srv0 := benchutil.SelfCPU(), servers()
	for i := 0; i < warmRuns; i++ {
		t0 := time.Now()
		if _, _, err := fn(false, &st); err != nil {
			m.Error = err.Error()
			break
		}
		warm = append(warm, float64(time.Since(t0).Microseconds())/1000)
	}
	if len(warm) > 0 {
		m.WarmMs = benchutil.Median(warm)
		m.WarmCPUReaderMs = float64((benchutil.SelfCPU() - cpu0).Microseconds()) / 1000 / float64(len(warm))
		m.WarmCPUServerMs = float64((servers() - srv0).Microseconds()) / 1000 / float64(len(warm))
	}
	t.Logf("%-34s %-12s %-28s rows %8d bytes %11d cold %8.1fms warm %8.1fms cpu %7.1f+%7.1fms %s (warm runs %.1f ms)", reader, idx, qname, m.Rows, m.Bytes, m.ColdMs, m.WarmMs,
		m.WarmCPUReaderMs, m.WarmCPUServerMs, m.Fallback, warm)
	return m
}

// sumIDs counts the result's rows and sums its id column.
func sumIDs(res *connector.Result) (int64, int64, error) {
	var n, sum int64
	for _, rec := range res.Records {
		n += rec.NumRows()
		for i, f := range rec.Schema().Fields() {
			if f.Name == "id" {
				sum += sumInt64(rec.Column(i))
			}
		}
	}
	return n, sum, nil
}

// sumInt64 sums an id column (int64; any other type through its text).
func sumInt64(col arrow.Array) int64 {
	var sum int64
	if ids, ok := col.(*array.Int64); ok {
		for _, v := range ids.Int64Values() {
			sum += v
		}
		return sum
	}
	for r := 0; r < col.Len(); r++ {
		v, _ := strconv.ParseInt(col.ValueStr(r), 10, 64)
		sum += v
	}
	return sum
}

func icebergScan(ctx context.Context, t *testing.T, c *harness.Cluster, name string, q query) (int64, int64, error) {
	ns, tn, _ := strings.Cut(name, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, tn})
	if err != nil {
		return 0, 0, err
	}
	filter, err := sqlpred.Parse(q.where)
	if err != nil {
		return 0, 0, err
	}
	opts := []table.ScanOption{table.WithRowFilter(filter), table.WithSelectedFields(q.sel...), table.WithCaseSensitive(false)}
	if q.limit > 0 {
		opts = append(opts, table.WithLimit(q.limit))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer at.Release()
	var sum int64
	if idx := at.Schema().FieldIndices("id"); len(idx) > 0 {
		for _, chunk := range at.Column(idx[0]).Data().Chunks() {
			sum += sumInt64(chunk)
		}
	}
	return at.NumRows(), sum, nil
}

var duck *sql.DB

func duckScan(dir string, q query) (int64, int64, error) {
	if duck == nil {
		var err error
		if duck, err = sql.Open("duckdb", ""); err != nil {
			return 0, 0, err
		}
	}
	stmt := fmt.Sprintf("SELECT %s FROM read_parquet('%s/*.parquet')", strings.Join(q.sel, ", "), dir)
	if q.duckdb != "" {
		stmt += " WHERE " + q.duckdb
	}
	if q.limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.limit)
	}
	rows, err := duck.Query(stmt)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n, sum int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, 0, err
		}
		n++
		for i, col := range cols {
			if col == "id" {
				if v, ok := vals[i].(int64); ok {
					sum += v
				}
			}
		}
	}
	return n, sum, rows.Err()
}

// checkAgreement: the three readers return the same rows (count and id
// sum; under a LIMIT, where each may return other matching rows, the
// count).
func checkAgreement(t *testing.T, ms []measurement, limit int64) {
	limited := limit > 0
	if limited && ms[0].Error == "" && ms[0].Rows != limit {
		t.Errorf("%s %s: %s returned %d rows, want the LIMIT's %d", ms[0].Indexed, ms[0].Query, ms[0].Reader, ms[0].Rows, limit)
	}
	for _, m := range ms[1:] {
		if m.Error != "" || ms[0].Error != "" {
			continue
		}
		if m.Rows != ms[0].Rows || (!limited && m.IDSum != ms[0].IDSum) {
			t.Errorf("%s %s: %s returned %d rows (id sum %d), %s %d rows (id sum %d)", m.Indexed, m.Query, m.Reader, m.Rows, m.IDSum, ms[0].Reader, ms[0].Rows, ms[0].IDSum)
		}
	}
}

func scrape(t *testing.T, port int, metric string) int64 {
	return benchutil.ScrapeMetric(t, port, metric)
}

func procIO(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func exec(name string, args ...string) error {
	p, err := os.StartProcess("/bin/"+name, append([]string{name}, args...), &os.ProcAttr{})
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

// runInfo is what the results' header says about the run.
type runInfo struct {
	started                time.Time
	loadAtStart, loadAtEnd string
	rows                   int64
}

// machine describes this machine: CPU model, cores and memory.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%s, %d cores%s", model, runtime.NumCPU(), mem)
}

// write puts the results in bench/results/peer.json and peer.md (the
// table scripts/readme-peer-table.sh copies into the README).
func write(t *testing.T, tables []peerTable, ms []measurement, info runInfo) {
	root, _ := harness.RepoRoot() // bench/peer (its own module)
	dir := filepath.Join(root, "..", "results")
	_ = os.MkdirAll(dir, 0o755)
	b, _ := json.MarshalIndent(ms, "", "  ")
	_ = os.WriteFile(filepath.Join(dir, "peer.json"), b, 0o644)
	byKey := map[string]measurement{}
	for _, m := range ms {
		byKey[m.Indexed+"|"+m.Query+"|"+m.Reader[:1]] = m
	}
	var md strings.Builder
	fmt.Fprintf(&md, "`BENCH=peer ./scripts/bench.sh`, %s (%.0f min), on %s; load average %s at the start, %s at the end. "+
		"Base tables %s rows in 8 files. Warm: median of 5 runs after one untimed warm-up run; CPU: mean of those runs, reader process (connector, iceberg-go, embedded DuckDB) "+
		"+ cluster (+ weed mount for c), in seconds per query. a = lakeweed connector, b = iceberg-go scan, c = DuckDB over weed mount.\n\n",
		info.started.UTC().Format("2006-01-02 15:04 UTC"), time.Since(info.started).Minutes(), machine(), info.loadAtStart, info.loadAtEnd, shortCount(info.rows))
	md.WriteString("| indexed | query | rows | bytes a | bytes b | bytes c | b/a bytes | c/a bytes | warm ms a | warm ms b | warm ms c | b/a warm | c/a warm | warm cpu s a | warm cpu s b | warm cpu s c | cold ms a | cold ms b | cold ms c |\n")
	md.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	ratio := func(x, y float64) string {
		if y == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f×", x/y)
	}
	cpu := func(m measurement) string { return fmt.Sprintf("%.3f", (m.WarmCPUReaderMs+m.WarmCPUServerMs)/1000) }
	for _, tb := range tables {
		for _, q := range tb.queries {
			a, b, c := byKey[tb.label+"|"+q.name+"|a"], byKey[tb.label+"|"+q.name+"|b"], byKey[tb.label+"|"+q.name+"|c"]
			fmt.Fprintf(&md, "| %s | %s | %d | %d | %d | %d | %s | %s | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f |\n",
				tb.label, q.name, a.Rows, a.Bytes, b.Bytes, c.Bytes, ratio(float64(b.Bytes), float64(a.Bytes)), ratio(float64(c.Bytes), float64(a.Bytes)),
				a.WarmMs, b.WarmMs, c.WarmMs, ratio(b.WarmMs, a.WarmMs), ratio(c.WarmMs, a.WarmMs), cpu(a), cpu(b), cpu(c), a.ColdMs, b.ColdMs, c.ColdMs)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "peer.md"), []byte(md.String()), 0o644)
	t.Logf("results in %s\n%s", dir, md.String())
}
