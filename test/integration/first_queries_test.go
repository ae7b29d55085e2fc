package integration

// What a new user meets first, through the `weed pushdown` commands as
// subprocesses: OFFSET, SELECT *, credentials in the environment, error
// messages, index reports, -stats, -h, the server's log, and memory.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// firstTable is the demo table these tests share: 40,000 rows in 4 files
// of 8 row groups, page indexes and blooms in half of them.
const firstTable = "first_it.events"

func firstTableOn(t *testing.T, c *harness.Cluster) {
	t.Helper()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 40_000, 4, 5_000, demo.IndexedHalf
	demoTableOn(t, c, firstTable, spec)
}

// bigTable is the default demo, a million rows in 8 files of 35 MB.
const (
	bigTable = "big_it.events"
	bigRows  = 1_000_000
)

func bigTableOn(t *testing.T, c *harness.Cluster) {
	t.Helper()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files = bigRows, 8
	demoTableOn(t, c, bigTable, spec)
}

// demoLoads are the demo tables loaded into the shared cluster, by name.
var demoLoads sync.Map // name → *demoLoad

type demoLoad struct {
	once sync.Once
	err  error
}

// demoTableOn loads the demo table name with spec into the shared cluster,
// once for the package's tests.
func demoTableOn(t *testing.T, c *harness.Cluster, name string, spec demo.Spec) {
	t.Helper()
	v, _ := demoLoads.LoadOrStore(name, &demoLoad{})
	l := v.(*demoLoad)
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
			l.err = fmt.Errorf("load %s: %w", name, err)
		}
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
}

// pushdown runs `weed pushdown <args> -catalog <the cluster>` with env
// added to a clean environment.
func pushdown(t *testing.T, c *harness.Cluster, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return harness.WeedEnv(t, "", env, append(append([]string{"pushdown"}, args...), "-catalog", c.CatalogAddr())...)
}

// queryIDs runs a query printing column id first and returns the ids, in
// output order, parsed from the format's output.
func queryIDs(t *testing.T, c *harness.Cluster, sql, format string, flags ...string) []string {
	t.Helper()
	out, errOut, err := pushdown(t, c, nil, append([]string{"query", "-sql", sql, "-format", format}, flags...)...)
	if err != nil {
		t.Fatalf("%s %v (%s): %v\n%s", sql, flags, format, err, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var ids []string
	switch format {
	case "csv":
		for _, l := range lines[1:] {
			ids = append(ids, strings.Split(l, ",")[0])
		}
	case "json":
		for _, l := range lines {
			if l == "" {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("json line %q: %v", l, err)
			}
			ids = append(ids, fmt.Sprint(row["id"]))
		}
	default:
		for _, l := range lines[1 : len(lines)-1] {
			ids = append(ids, strings.Fields(l)[0])
		}
		if want := fmt.Sprintf("(%d rows)", len(ids)); lines[len(lines)-1] != want {
			t.Fatalf("table output ends with %q, want %q", lines[len(lines)-1], want)
		}
	}
	return ids
}

// LIMIT n OFFSET m returns rows m to m+n-1 of the answer, the same rows in
// every mode (plain, planned page-aware and row-group) and every format:
// the rows the unlimited plain read has at those places.
func TestOffsetSkipsTheSameRowsInEveryModeAndFormat(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	c := sharedCluster(t)
	firstTableOn(t, c)
	modes := [][]string{nil, {"-no-pushdown"}, {"-force"}, {"-force", "-mode", "rowgroup"}}
	for _, where := range []string{"", " WHERE tenant_id = 'tenant-007'", " WHERE status = 'error' AND id < 30000"} {
		all := queryIDs(t, c, "SELECT id, tenant_id FROM "+firstTable+where, "csv", "-no-pushdown")
		if len(all) < 40 {
			t.Fatalf("%q: only %d rows", where, len(all))
		}
		for _, m := range modes {
			for _, lim := range []struct{ limit, offset int }{{5, 10}, {3, 0}, {7, len(all) - 4}} {
				sql := fmt.Sprintf("SELECT id, tenant_id FROM %s%s LIMIT %d OFFSET %d", firstTable, where, lim.limit, lim.offset)
				want := all[lim.offset:min(len(all), lim.offset+lim.limit)]
				if got := queryIDs(t, c, sql, "csv", m...); !slices.Equal(got, want) {
					t.Errorf("%s %v: %v, want %v", sql, m, got, want)
				}
			}
		}
		// OFFSET without LIMIT: the rest of the answer
		sql := fmt.Sprintf("SELECT id, tenant_id FROM %s%s OFFSET %d", firstTable, where, len(all)-6)
		for _, m := range modes {
			if got := queryIDs(t, c, sql, "csv", m...); !slices.Equal(got, all[len(all)-6:]) {
				t.Errorf("%s %v: %v, want %v", sql, m, got, all[len(all)-6:])
			}
		}
	}
	all := queryIDs(t, c, "SELECT id FROM "+firstTable+" WHERE tenant_id = 'tenant-007'", "csv", "-no-pushdown")
	for _, format := range []string{"table", "json"} {
		for _, m := range modes {
			sql := "SELECT id FROM " + firstTable + " WHERE tenant_id = 'tenant-007' LIMIT 4 OFFSET 2"
			if got := queryIDs(t, c, sql, format, m...); !slices.Equal(got, all[2:6]) {
				t.Errorf("%s %v (%s): %v, want %v", sql, m, format, got, all[2:6])
			}
		}
	}
	if got := queryIDs(t, c, "SELECT id FROM "+firstTable+" LIMIT 5 OFFSET 1000000", "table"); len(got) != 0 {
		t.Errorf("OFFSET past the end: %v", got)
	}
	if got := queryIDs(t, c, "SELECT id FROM "+firstTable+" LIMIT 0", "table", "-force"); len(got) != 0 {
		t.Errorf("LIMIT 0: %v", got)
	}
}

// SELECT * of the demo (its fixed-size list embedding among the columns)
// works by default (read plainly: no predicate), without pushdown and
// through the plan in both decodings, with the same rows and values.
func TestSelectStarOfTheDemoReturnsTheSameRowsInEveryMode(t *testing.T) {
	c := sharedCluster(t)
	firstTableOn(t, c)
	for _, sql := range []string{
		"SELECT * FROM " + firstTable + " LIMIT 2",
		"SELECT * FROM " + firstTable + " WHERE status = 'error' LIMIT 3 OFFSET 1",
		"SELECT embedding, id FROM " + firstTable + " WHERE id < 50",
	} {
		var want string
		for _, m := range [][]string{{"-no-pushdown"}, nil, {"-force"}, {"-force", "-mode", "rowgroup"}} {
			out, errOut, err := pushdown(t, c, nil, append([]string{"query", "-sql", sql, "-format", "csv", "-stats"}, m...)...)
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", sql, m, err, errOut)
			}
			if want == "" {
				want = out
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if strings.HasPrefix(sql, "SELECT *") && (lines[0] != "id,ts,tenant_id,status,message,tags,embedding" || len(lines) < 3) {
					t.Fatalf("%s: %q", sql, lines)
				}
				if n := strings.Count(lines[1], ",") - strings.Count(lines[0], ","); n < 63 {
					t.Fatalf("%s: the embedding of the first row has %d values, want 64: %s", sql, n+1, lines[1])
				}
				continue
			}
			if out != want {
				t.Errorf("%s %v differs from the plain read:\n%s\nwant\n%s", sql, m, out, want)
			}
		}
	}
}

// With AWS_ACCESS_KEY_ID=any in the environment (as the aws CLI wants
// one) the client commands work against a cluster without S3 identities,
// saying once that the key is not used.
func TestClientCommandsWorkWithAnyAWSCredentialsWhenTheClusterHasNoIdentities(t *testing.T) {
	c := sharedCluster(t)
	firstTableOn(t, c)
	env := []string{"AWS_ACCESS_KEY_ID=any", "AWS_SECRET_ACCESS_KEY=any"}
	for _, args := range [][]string{
		{"status"},
		{"plan", "-table", firstTable, "-where", "id = 5"},
		{"query", "-sql", "SELECT id FROM " + firstTable + " WHERE tenant_id = 'tenant-001' LIMIT 2"},
		{"query", "-sql", "SELECT id FROM " + firstTable + " LIMIT 2", "-no-pushdown"},
		{"demo", "-table", "creds_it.small", "-rows", "1000", "-files", "1"},
		{"index", "list", "-table", firstTable},
	} {
		out, errOut, err := pushdown(t, c, env, args...)
		if err != nil {
			t.Errorf("%v with AWS_ACCESS_KEY_ID=any: %v\n%s%s", args, err, out, errOut)
			continue
		}
		if args[0] != "status" && strings.Count(errOut, `knows no identity with access key "any" and serves anonymous callers`) != 1 {
			t.Errorf("%v: stderr does not say once that the key is not used:\n%s", args, errOut)
		}
	}
}

// Errors name what to do: an unknown column lists the table's columns, a
// literal of the wrong type names the column and type, an expression
// in SELECT is named as not supported; a date compared with a timestamp is its
// midnight.
func TestQueryErrorsSayWhatToDo(t *testing.T) {
	c := sharedCluster(t)
	firstTableOn(t, c)
	columns := "the table's columns are: id, ts, tenant_id, status, message, tags, embedding"
	for sql, want := range map[string]string{
		"SELECT id FROM " + firstTable + " WHERE tenant = 'a'":                        `no column "tenant"; ` + columns,
		"SELECT id, nope FROM " + firstTable:                                          `no column "nope"; ` + columns,
		"SELECT id FROM " + firstTable + " WHERE tenant_id = 5":                       "column tenant_id is string, and the number 5 is not a string value; quote it: '5'",
		"SELECT id FROM " + firstTable + " WHERE id = 'x'":                            "column id is long, and the string 'x' is not a long value; write a number (no quotes)",
		"SELECT id FROM " + firstTable + " WHERE ts > 'noon'":                         "column ts is timestamp, and the string 'noon' is not a timestamp value; write TIMESTAMP 'YYYY-MM-DD HH:MM:SS'",
		"SELECT id + 1 FROM " + firstTable:                                            `the select item "id + 1" (not a column or an aggregate; expressions are not computed) is not supported`,
		"SELECT id FROM " + firstTable + " ORDER BY embedding <-> '[1]' DESC LIMIT 3": "ORDER BY a vector distance is ascending",
	} {
		_, errOut, err := pushdown(t, c, nil, "query", "-sql", sql)
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("%s: %v\n%s\nwant it to say %q", sql, err, errOut, want)
		}
	}
	day := queryIDs(t, c, "SELECT id FROM "+firstTable+" WHERE ts >= DATE '2026-01-01' AND ts < '2026-01-01'", "csv")
	if len(day) != 0 {
		t.Errorf("ts in [midnight, midnight): %v", day)
	}
	got := queryIDs(t, c, "SELECT id FROM "+firstTable+" WHERE ts < DATE '2026-01-02' LIMIT 30", "csv")
	want := queryIDs(t, c, "SELECT id FROM "+firstTable+" WHERE ts < TIMESTAMP '2026-01-02 00:00:00' LIMIT 30", "csv")
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("ts < DATE '2026-01-02': %v, want the rows of ts < TIMESTAMP '2026-01-02 00:00:00': %v", got, want)
	}
}

// -stats counts the files and row groups read (a LIMIT met inside a file
// still read it), says a vector query read with -no-pushdown was not
// pushed down, and a plan's tiers each take at most the plan's time; -h
// prints the usage and exits 0.
func TestStatsCountWhatWasReadAndHelpExitsZero(t *testing.T) {
	c := sharedCluster(t)
	firstTableOn(t, c)
	stats := func(args ...string) map[string]any {
		t.Helper()
		_, errOut, err := pushdown(t, c, nil, append(args, "-stats")...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		var st map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &st); err != nil {
			t.Fatalf("%v: -stats line %q: %v", args, lines[len(lines)-1], err)
		}
		return st
	}
	st := stats("query", "-sql", "SELECT id FROM "+firstTable+" LIMIT 5", "-force")
	if st["pushdown"] != true || st["files"] != 1.0 || st["row_groups"] != 1.0 || st["rows"] != 5.0 {
		t.Errorf("a LIMIT 5 read through the plan: %v; want pushdown, 1 file, 1 row group, 5 rows", st)
	}
	st = stats("query", "-sql", "SELECT id FROM "+firstTable+" WHERE tenant_id = 'tenant-007'", "-no-pushdown")
	if st["pushdown"] != false || st["files"] == 0.0 {
		t.Errorf("a plain read: %v; want pushdown false and the files it read", st)
	}
	st = stats("query", "-sql", "SELECT id, _distance FROM "+firstTable+" ORDER BY embedding <-> '"+zeroVector(64)+"' LIMIT 3", "-no-pushdown")
	if st["pushdown"] != false || st["vector_search"] != "connector (exact)" || st["rows"] != 3.0 {
		t.Errorf("a vector query with -no-pushdown: %v; want pushdown false, searched exactly in the connector, 3 rows", st)
	}

	out, errOut, err := pushdown(t, c, nil, "plan", "-table", firstTable, "-where", "tenant_id = 'tenant-007' AND id < 20000", "-json")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	var plan struct {
		Stats struct {
			PlanMicros string `json:"plan_micros"`
			Tiers      []struct {
				Tier   string `json:"tier"`
				Micros string `json:"micros"`
			} `json:"tiers"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	total, _ := strconv.ParseInt(plan.Stats.PlanMicros, 10, 64)
	for _, tier := range plan.Stats.Tiers {
		if us, _ := strconv.ParseInt(tier.Micros, 10, 64); us > total {
			t.Errorf("tier %s took %d µs of a plan of %d µs", tier.Tier, us, total)
		}
	}

	for _, sub := range [][]string{{"query", "-h"}, {"plan", "-h"}, {"status", "-h"}, {"demo", "-h"}, {"index", "-h"}} {
		_, errOut, err := harness.Weed(t, append([]string{"pushdown"}, sub...)...)
		if err != nil || !strings.Contains(errOut, "usage: weed pushdown "+sub[0]) {
			t.Errorf("weed pushdown %s: %v\n%s", strings.Join(sub, " "), err, errOut)
		}
	}
}

func zeroVector(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("0.5,", n), ",") + "]"
}

// index create -wait reports what is committed (a commit already built the
// new file's index), index list names the columns and -json gives the
// files indexed per wanted index; dropping an index the table does not
// want is an error naming those it wants.
func TestIndexCommandsReportWhatIsCommitted(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 8_000, 2, 2_000, demo.IndexedNone
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "ixcli_it.events", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := pushdown(t, c, nil, "index", "create", "-table", "ixcli_it.events", "-column", "id", "-kind", "btree", "-wait")
	if err != nil || !strings.Contains(errOut, "btree index on id: 2 of 2 files indexed") {
		t.Fatalf("index create: %v\n%s", err, errOut)
	}
	// a commit builds its new file's index; -wait then reports it indexed
	out, errOut, err := pushdown(t, c, nil, "demo", "-table", "ixcli_it.events", "-append", "-rows", "1000")
	if err != nil {
		t.Fatalf("demo -append: %v\n%s%s", err, out, errOut)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, errOut, err = pushdown(t, c, nil, "index", "create", "-table", "ixcli_it.events", "-column", "id", "-kind", "btree", "-wait")
		if err == nil && strings.Contains(errOut, "btree index on id: 3 of 3 files indexed") || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil || !strings.Contains(errOut, "btree index on id: 3 of 3 files indexed") {
		t.Fatalf("index create -wait after a commit: %v\n%s", err, errOut)
	}
	out, errOut, err = pushdown(t, c, nil, "index", "list", "-table", "ixcli_it.events")
	if err != nil || !strings.Contains(out, "COLUMN") || !strings.Contains(out, "id      1         btree") || !strings.Contains(out, "3 of 3") {
		t.Errorf("index list: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = pushdown(t, c, nil, "index", "list", "-table", "ixcli_it.events", "-json")
	if err != nil {
		t.Fatalf("index list -json: %v\n%s", err, errOut)
	}
	var list struct {
		Wanted []struct {
			Column       string `json:"column"`
			Kind         string `json:"kind"`
			FilesIndexed int64  `json:"files_indexed"`
		} `json:"wanted"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Wanted) != 1 || list.Wanted[0].Column != "id" || list.Wanted[0].FilesIndexed != 3 {
		t.Errorf("index list -json: %v\n%s", err, out)
	}
	_, errOut, err = pushdown(t, c, nil, "index", "drop", "-table", "ixcli_it.events", "-column", "tenant_id", "-kind", "bloom")
	if err == nil || !strings.Contains(errOut, "has no bloom index on tenant_id to drop (its indexes: btree on id)") {
		t.Errorf("dropping an index the table does not want: %v\n%s", err, errOut)
	}
	_, errOut, err = pushdown(t, c, nil, "index", "drop", "-table", "ixcli_it.events", "-column", "id", "-kind", "btree")
	if err != nil || !strings.Contains(errOut, "wants 0 side indexes") {
		t.Errorf("index drop: %v\n%s", err, errOut)
	}
}

// Plain reads (-no-pushdown, cost-model fallbacks, SELECT *) and reads a
// LIMIT stops early leave no failed stream in the server's log: every GET
// asks for the bytes it reads and reads them to the end.
func TestReadsLeaveNoFailedStreamInTheServerLog(t *testing.T) {
	c := sharedCluster(t)
	bigTableOn(t, c) // files of 35 MB: a cut response is noticed
	before, err := os.ReadFile(c.Proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"query", "-sql", "SELECT * FROM " + bigTable + " LIMIT 2"},
		{"query", "-sql", "SELECT id, tenant_id FROM " + bigTable + " WHERE tenant_id = 'tenant-001' AND id < 1000", "-no-pushdown"},
		{"query", "-sql", "SELECT id, message FROM " + bigTable + " LIMIT 3", "-no-pushdown"},
		{"query", "-sql", "SELECT * FROM " + bigTable + " WHERE tenant_id = 'tenant-001' LIMIT 2", "-force", "-read", "s3"},
		{"query", "-sql", "SELECT id FROM " + bigTable + " LIMIT 1", "-force", "-read", "s3", "-mode", "rowgroup"},
	} {
		if _, errOut, err := pushdown(t, c, nil, args...); err != nil {
			t.Errorf("%v: %v\n%s", args, err, errOut)
		}
	}
	time.Sleep(time.Second)
	after, err := os.ReadFile(c.Proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(after[min(len(before), len(after)):]), "\n") {
		if strings.Contains(l, "streamFromVolumeServers") || strings.Contains(l, "broken pipe") || strings.Contains(l, "connection reset by peer") {
			t.Errorf("the server logged: %s", l)
		}
	}
}

// A million-row SELECT * in table format streams: the client's peak RSS
// grows over a one-row query's by at most 512 MiB (the CLI's soft heap
// limit for its default -maxBufferMB 64 is twice it plus 256 MB; the rows
// decoded are ~400 MB; it held every formatted row before: 4 GB, and its
// formatting garbage outran the collector under load: 2.7 GB), every row
// printed.
func TestASelectStarOfAMillionRowsRunsInBoundedMemory(t *testing.T) {
	if vmHWM(os.Getpid()) == 0 {
		t.Skip("no /proc/<pid>/status VmHWM on this system to measure a process's peak memory")
	}
	const rows = bigRows
	c := sharedCluster(t)
	bigTableOn(t, c)
	run := func(sql string) (peak int64, lines *lineCounter, took time.Duration) {
		cmd := exec.Command(harness.Binary(t), "pushdown", "query", "-sql", sql, "-force", "-catalog", c.CatalogAddr())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		lines = &lineCounter{}
		var errOut strings.Builder
		cmd.Stdout, cmd.Stderr = lines, &errOut
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child's own high-water mark (VmHWM), polled: its rusage
		// ru_maxrss would include this test process's, inherited through
		// fork and exec.
		done := make(chan struct{})
		polled := make(chan int64)
		go func() {
			var hwm int64
			for {
				if v := vmHWM(cmd.Process.Pid); v > hwm {
					hwm = v
				}
				select {
				case <-done:
					polled <- hwm
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		err := cmd.Wait()
		close(done)
		peak = <-polled
		if err != nil {
			t.Fatalf("%s: %v\n%s", sql, err, errOut.String())
		}
		return peak, lines, time.Since(start)
	}
	base, _, _ := run("SELECT * FROM " + bigTable + " LIMIT 1")
	peak, lines, took := run("SELECT * FROM " + bigTable)
	grew := peak - base
	t.Logf("SELECT * of %d rows in table format: %s, peak RSS %d MiB (a one-row query's: %d MiB), %d MiB written", rows, took.Round(time.Millisecond), peak>>20, base>>20, lines.bytes>>20)
	if lines.n != rows+2 || !strings.HasSuffix(lines.last, fmt.Sprintf("(%d rows)", rows)) {
		t.Fatalf("%d lines ending %q, want the header, %d rows and the count", lines.n, lines.last, rows)
	}
	if bound := int64(512) << 20; grew > bound {
		t.Errorf("peak RSS grew %d MiB over a one-row query's, want at most %d MiB", grew>>20, bound>>20)
	}
}

// lineCounter counts the lines written to it and keeps the last.
type lineCounter struct {
	n, bytes int64
	cur      []byte
	last     string
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.bytes += int64(len(p))
	for _, b := range p {
		if b == '\n' {
			l.n++
			l.last = string(l.cur)
			l.cur = l.cur[:0]
			continue
		}
		if len(l.cur) < 256 {
			l.cur = append(l.cur, b)
		}
	}
	return len(p), nil
}

// vmHWM is process pid's peak resident set size (VmHWM in
// /proc/<pid>/status) in bytes, 0 when unknown.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
