// Package peer compares three readers of the same `weed pushdown demo`
// tables in one run, side by side:
//
//	a. the lakeweed connector with pushdown (plan → planned ranges via S3)
//	b. iceberg-go's own scan through the S3 gateway (row-group stats + bloom)
//	c. DuckDB (duckdb-go, embedded) reading the Parquet files through `weed mount`
//
// for a point lookup on the unclustered id, a 1% ts range, tenant_id and
// status equality, and a two-column full scan, on tables written with page
// indexes and bloom filters in all, half and none of the files. It lives in
// its own module so the main build stays pure Go. Run with `make bench`.
package peer

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	_ "github.com/duckdb/duckdb-go/v2"

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
		{"point lookup id", id, []string{"id", "tenant_id", "status", "message"}, id},
		{"1% ts range", rng, []string{"id", "ts", "message"}, rng},
		{"tenant_id equality", "tenant_id = 'tenant-042'", []string{"id", "tenant_id", "status"}, "tenant_id = 'tenant-042'"},
		{"status equality", "status = 'error'", []string{"id", "status"}, "status = 'error'"},
		{"full scan of two columns", "", []string{"id", "ts"}, ""},
	}
}

type measurement struct {
	Rows     int64   `json:"rows"`
	IDSum    int64   `json:"id_sum"`
	Bytes    int64   `json:"bytes_read"` // SeaweedFS-side: S3 bytes sent (a, b), volume bytes read by weed mount (c)
	ColdMs   float64 `json:"cold_ms"`
	WarmMs   float64 `json:"warm_median_ms"`
	Pushdown bool    `json:"pushdown,omitempty"`
	Fallback string  `json:"fallback_reason,omitempty"`
	Reader   string  `json:"reader"`
	Indexed  string  `json:"indexed"`
	Query    string  `json:"query"`
	Error    string  `json:"error,omitempty"`
}

func TestPeerBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (LAKEWEED_BENCH=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("weed mount (FUSE) needs root here")
	}
	metricsPort := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-metricsPort=" + strconv.Itoa(metricsPort)}})
	ctx := context.Background()
	rows := int64(1_000_000)
	if v := os.Getenv("LAKEWEED_BENCH_ROWS"); v != "" {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	tables := map[string]string{}
	modeList := peerModes()
	for _, mode := range modeList {
		idx := demo.Indexed(mode)
		if mode == sideMode {
			idx = demo.IndexedNone // the files of "none", with side indexes
		}
		spec := demo.DefaultSpec()
		spec.Rows, spec.Indexed = rows, idx
		name := "peer." + mode
		res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		tables[mode] = res.Location
		if mode == sideMode {
			createSideIndexes(t, c, name)
		}
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
			"-filer.path="+bucketSafeMountPath("peer"), "-readOnly", "-cacheDir="+filepath.Join(c.Dir, fmt.Sprintf("mountcache%d", generation)))
		waitMounted(t, mnt)
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

	var results []measurement
	for _, idx := range modeList {
		loc := tables[idx]
		dir := filepath.Join(mnt, strings.TrimPrefix(loc, "s3://warehouse/peer/"), "data")
		for _, q := range queries(rows) {
			// a. connector with pushdown
			results = append(results, run(t, "a. lakeweed connector (pushdown)", idx, q.name, s3Sent, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				conn := connectorFor(t, c, fresh)
				res, err := conn.Query(ctx, connector.Query{Table: "peer." + idx, Where: q.where, Select: q.sel})
				if err != nil {
					return 0, 0, err
				}
				defer res.Release()
				*st = res.Stats
				return sumIDs(res)
			}))
			// b. iceberg-go scan through the S3 gateway
			results = append(results, run(t, "b. iceberg-go scan", idx, q.name, s3Sent, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				return icebergScan(ctx, t, c, "peer."+idx, q)
			}))
			// c. DuckDB over weed mount
			remount()
			results = append(results, run(t, "c. DuckDB via weed mount", idx, q.name, mountRead, func(fresh bool, st *connector.Stats) (int64, int64, error) {
				return duckScan(dir, q)
			}))
			checkAgreement(t, results[len(results)-3:])
		}
	}
	write(t, results)
}

// sideMode is the table written like "none" (no page index, no bloom
// filters) with side indexes built beside it: btree(id), bloom(tenant_id)
// and page_index on every column the queries read.
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
	kindq.CreateIndexes(t, c, name, [2]string{"id", "btree"}, [2]string{"tenant_id", "bloom"}, [2]string{"id", "page_index"},
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

// run measures one reader on one query: a cold run (fresh reader state) and
// the median of five warm runs; bytes are the SeaweedFS-side counter delta
// of the cold run.
func run(t *testing.T, reader, idx, qname string, counter func() int64, fn func(fresh bool, st *connector.Stats) (int64, int64, error)) measurement {
	m := measurement{Reader: reader, Indexed: idx, Query: qname}
	var st connector.Stats
	before := counter()
	t0 := time.Now()
	n, sum, err := fn(true, &st)
	m.ColdMs = float64(time.Since(t0).Microseconds()) / 1000
	m.Bytes = counter() - before
	if err != nil {
		m.Error = err.Error()
		t.Logf("%s %s %s: %v", reader, idx, qname, err)
		return m
	}
	m.Rows, m.IDSum, m.Pushdown, m.Fallback = n, sum, st.Pushdown, st.FallbackReason
	var warm []float64
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if _, _, err := fn(false, &st); err != nil {
			m.Error = err.Error()
			break
		}
		warm = append(warm, float64(time.Since(t0).Microseconds())/1000)
	}
	sort.Float64s(warm)
	if len(warm) > 0 {
		m.WarmMs = warm[len(warm)/2]
	}
	t.Logf("%-34s %-5s %-26s rows %7d bytes %11d cold %8.1fms warm %8.1fms %s", reader, idx, qname, m.Rows, m.Bytes, m.ColdMs, m.WarmMs, m.Fallback)
	return m
}

func sumIDs(res *connector.Result) (int64, int64, error) {
	var n, sum int64
	for _, rec := range res.Records {
		idCol := -1
		for i, f := range rec.Schema().Fields() {
			if f.Name == "id" {
				idCol = i
			}
		}
		n += rec.NumRows()
		if idCol >= 0 {
			sum += sumInts(rec.Column(idCol))
		}
	}
	return n, sum, nil
}

// sumInts adds the non-null values of an integer column with typed access:
// the readers' answer is checked, not how fast a value formats as a string
// (ValueStr and ParseInt took about 0.7 s for 1M rows, more than a scan).
func sumInts(arr arrow.Array) int64 {
	var sum int64
	switch a := arr.(type) {
	case *array.Int64:
		for r, v := range a.Int64Values() {
			if a.IsValid(r) {
				sum += v
			}
		}
	case *array.Int32:
		for r, v := range a.Int32Values() {
			if a.IsValid(r) {
				sum += int64(v)
			}
		}
	default:
		for r := 0; r < arr.Len(); r++ {
			if arr.IsValid(r) {
				v, _ := strconv.ParseInt(arr.ValueStr(r), 10, 64)
				sum += v
			}
		}
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
	at, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(q.sel...), table.WithCaseSensitive(false)).ToArrowTable(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer at.Release()
	var n, sum int64
	idx := at.Schema().FieldIndices("id")
	n = at.NumRows()
	if len(idx) > 0 {
		for _, chunk := range at.Column(idx[0]).Data().Chunks() {
			sum += sumInts(chunk)
		}
	}
	return n, sum, nil
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

// checkAgreement: the three readers return the same rows (count and id sum).
func checkAgreement(t *testing.T, ms []measurement) {
	for _, m := range ms[1:] {
		if m.Error != "" || ms[0].Error != "" {
			continue
		}
		if m.Rows != ms[0].Rows || m.IDSum != ms[0].IDSum {
			t.Errorf("%s %s: %s returned %d rows (id sum %d), %s %d rows (id sum %d)", m.Indexed, m.Query, m.Reader, m.Rows, m.IDSum, ms[0].Reader, ms[0].Rows, ms[0].IDSum)
		}
	}
}

func waitMounted(t *testing.T, dir string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile("/proc/mounts"); err == nil && strings.Contains(string(b), dir) {
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("weed mount at %s did not come up", dir)
}

func scrape(t *testing.T, port int, metric string) int64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("scrape S3 metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, metric+" ") {
			f, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, metric)), 64)
			return int64(f)
		}
	}
	return 0
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

func write(t *testing.T, ms []measurement) {
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
	md.WriteString("| indexed | query | rows | bytes a | bytes b | bytes c | b/a bytes | c/a bytes | warm ms a | warm ms b | warm ms c | b/a warm | c/a warm | cold ms a | cold ms b | cold ms c |\n")
	md.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, idx := range peerModes() {
		for _, q := range queries(0) {
			a, b, c := byKey[idx+"|"+q.name+"|a"], byKey[idx+"|"+q.name+"|b"], byKey[idx+"|"+q.name+"|c"]
			ratio := func(x, y float64) string {
				if y == 0 {
					return "n/a"
				}
				return fmt.Sprintf("%.1f×", x/y)
			}
			fmt.Fprintf(&md, "| %s | %s | %d | %d | %d | %d | %s | %s | %.1f | %.1f | %.1f | %s | %s | %.1f | %.1f | %.1f |\n",
				idx, q.name, a.Rows, a.Bytes, b.Bytes, c.Bytes, ratio(float64(b.Bytes), float64(a.Bytes)), ratio(float64(c.Bytes), float64(a.Bytes)),
				a.WarmMs, b.WarmMs, c.WarmMs, ratio(b.WarmMs, a.WarmMs), ratio(c.WarmMs, a.WarmMs), a.ColdMs, b.ColdMs, c.ColdMs)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "peer.md"), []byte(md.String()), 0o644)
	t.Logf("results in %s\n%s", dir, md.String())
}
