package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// flightIdentities: admin reads everything, alice only fsql_it/open*.
const flightIdentities = `{
  "identities": [
    {"name": "admin", "credentials": [{"accessKey": "AKADMIN000000000", "secretKey": "admin-secret"}],
     "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
    {"name": "alice", "credentials": [{"accessKey": "AKALICE000000000", "secretKey": "alice-secret"}],
     "actions": ["Read:warehouse/fsql_it/open*", "List:warehouse"]}
  ]
}`

// A cluster started with -pushdown.flightsql.port serves Flight SQL to
// arrow-go's Flight SQL client and its database/sql driver: metadata lists
// the tables the caller may read with their schemas, queries answer what
// the CLI answers, prepared statements bind parameters, unsupported SQL is
// refused naming the construct, callers without credentials or reading a
// table they may not are refused, a cancelled read ends, and streams the
// caller drops halfway leave no goroutine behind on the server.
func TestFlightSQLServesQueriesAndMetadataToItsCallersIdentities(t *testing.T) {
	port := harness.FreePorts(t, 1)[0]
	opts := harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(flightIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json", "-pushdown.flightsql.port=" + strconv.Itoa(port)},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	}
	metricsURL := harness.WithMetrics(t, &opts)
	c := harness.StartMini(t, opts)
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows = 8_000, 2, 2_000
	for _, name := range []string{"fsql_it.open_events", "fsql_it.closed_events"} {
		if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	client, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	login := func(user, pass string) (context.Context, error) {
		return client.Client.AuthenticateBasicToken(ctx, user, pass)
	}
	admin, err := login("AKADMIN000000000", "admin-secret")
	if err != nil {
		t.Fatalf("basic auth as admin: %v", err)
	}
	alice, err := login("AKALICE000000000", "alice-secret")
	if err != nil {
		t.Fatalf("basic auth as alice: %v", err)
	}

	// refused without credentials, with a wrong secret, with a made-up token
	if _, err := client.Execute(ctx, "SELECT COUNT(*) FROM fsql_it.open_events"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a query without credentials: %v, want Unauthenticated", err)
	}
	if _, err := login("AKADMIN000000000", "wrong"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a wrong secret: %v, want Unauthenticated", err)
	}
	forged := metadataCtx(ctx, "Bearer 0123456789abcdef")
	if _, err := client.GetCatalogs(forged); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a made-up bearer token: %v, want Unauthenticated", err)
	}

	// metadata
	cats := flightRows(t, client, admin, mustInfo(client.GetCatalogs(admin)))
	if len(cats) != 1 || cats[0][0] != "warehouse" {
		t.Errorf("catalogs %v, want [warehouse]", cats)
	}
	schemas := flightRows(t, client, admin, mustInfo(client.GetDBSchemas(admin, &flightsql.GetDBSchemasOpts{})))
	if !slices.ContainsFunc(schemas, func(r []string) bool { return r[1] == "fsql_it" }) {
		t.Errorf("schemas %v lack fsql_it", schemas)
	}
	tablesOf := func(who context.Context) map[string]*arrow.Schema {
		t.Helper()
		info, err := client.GetTables(who, &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("fsql%"), IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*arrow.Schema{}
		forEachRecord(t, client, who, info, func(rec arrow.RecordBatch) {
			for i := 0; i < int(rec.NumRows()); i++ {
				sch, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(i), memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				out[rec.Column(1).(*array.String).Value(i)+"."+rec.Column(2).(*array.String).Value(i)] = sch
			}
		})
		return out
	}
	all := tablesOf(admin)
	if len(all) != 2 || all["fsql_it.open_events"] == nil || all["fsql_it.closed_events"] == nil {
		t.Fatalf("admin's tables %v, want open_events and closed_events", keys(all))
	}
	var names []string
	for _, f := range all["fsql_it.open_events"].Fields() {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "id,ts,tenant_id,status,message,tags,embedding" {
		t.Errorf("open_events schema columns %v", names)
	}
	// alice may read open_events only: closed_events is never listed to her
	// (here the Iceberg catalog lets her list nothing: she sees no tables)
	if got := tablesOf(alice); got["fsql_it.closed_events"] != nil || len(got) > 1 {
		t.Errorf("alice's tables %v, want at most fsql_it.open_events", keys(got))
	}
	if pk := flightRows(t, client, admin, mustInfo(client.GetPrimaryKeys(admin, flightsql.TableRef{DBSchema: ptr("fsql_it"), Table: "open_events"}))); len(pk) != 0 {
		t.Errorf("primary keys %v, want none", pk)
	}
	info, err := client.GetSqlInfo(admin, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	if rows := flightRows(t, client, admin, info); len(rows) != 2 {
		t.Errorf("sql info %v, want 2 entries", rows)
	}

	// a GROUP BY equals the CLI's answer
	const groupBy = "SELECT tenant_id, COUNT(*) AS n, MAX(id) AS top FROM fsql_it.open_events WHERE status = 'error' GROUP BY tenant_id ORDER BY tenant_id"
	got := flightRows(t, client, admin, mustInfo(client.Execute(admin, groupBy)))
	out, errOut, err := pushdown(t, c, []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}, "query", "-sql", groupBy, "-format", "csv")
	if err != nil {
		t.Fatalf("CLI: %v\n%s", err, errOut)
	}
	cli := strings.Split(strings.TrimSpace(out), "\n")[1:]
	var flightLines []string
	for _, r := range got {
		flightLines = append(flightLines, strings.Join(r, ","))
	}
	if len(cli) == 0 || !slices.Equal(flightLines, cli) {
		t.Errorf("Flight SQL %v\nCLI %v", flightLines, cli)
	}

	// a GROUP BY answered by the volumes' partial aggregates (one
	// AggregateRows call per file, 2 files) equals the CLI's rows read here
	const grouped = "SELECT status, COUNT(*) AS n, AVG(id) AS mean, MIN(tenant_id) AS first FROM fsql_it.open_events GROUP BY status ORDER BY status"
	aggregateCalls := func() float64 {
		v, _ := harness.Scrape(t, metricsURL).Value("SeaweedFS_pushdown_rpc_requests_total", "service", "volume", "method", "AggregateRows", "code", "OK")
		return v
	}
	before := aggregateCalls()
	var flightGrouped []string
	for _, r := range flightRows(t, client, admin, mustInfo(client.Execute(admin, grouped))) {
		flightGrouped = append(flightGrouped, strings.Join(r, ","))
	}
	if calls := aggregateCalls() - before; calls != 2 {
		t.Errorf("Flight SQL %s made %v AggregateRows calls, want 2 (one a file)", grouped, calls)
	}
	out, errOut, err = pushdown(t, c, []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}, "query", "-sql", grouped, "-format", "csv", "-aggregateAt", "here")
	if err != nil {
		t.Fatalf("CLI: %v\n%s", err, errOut)
	}
	if cliGrouped := strings.Split(strings.TrimSpace(out), "\n")[1:]; len(cliGrouped) != 5 || !slices.Equal(flightGrouped, cliGrouped) {
		t.Errorf("GROUP BY status: Flight SQL (volume partials) %v\nCLI (-aggregateAt here) %v", flightGrouped, cliGrouped)
	}

	// MIN/MAX of integer-backed columns and COUNT(*) with no predicate and
	// no deletes: every row group (4) answered from its footer statistics
	const extremes = "SELECT MIN(id) AS lo, MAX(id) AS hi, MIN(ts) AS first, COUNT(*) AS n FROM fsql_it.open_events"
	keys := []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}
	fromStats, statsJSON, err := pushdown(t, c, keys, "query", "-sql", extremes, "-format", "csv", "-stats")
	if err != nil {
		t.Fatalf("CLI: %v\n%s", err, statsJSON)
	}
	read, errOut, err := pushdown(t, c, keys, "query", "-sql", extremes, "-format", "csv", "-aggregateAt", "here")
	if err != nil {
		t.Fatalf("CLI: %v\n%s", err, errOut)
	}
	if fromStats != read || !strings.Contains(read, ",8000") {
		t.Errorf("%s: from statistics %q, read here %q", extremes, fromStats, read)
	}
	if !strings.Contains(statsJSON, `"aggregate_statistics_row_groups":4`) || !strings.Contains(statsJSON, `"answered_by":"volume partial aggregates"`) {
		t.Errorf("%s: -stats %s, want its 4 row groups answered from statistics by the volumes", extremes, statsJSON)
	}

	// a vector search: the same k nearest rows and distances as the CLI
	vec := "[" + strings.TrimSuffix(strings.Repeat("0.25, ", demo.EmbeddingDim), ", ") + "]"
	nearest := "SELECT id, _distance FROM fsql_it.open_events WHERE status = 'ok' ORDER BY embedding <-> '" + vec + "' LIMIT 4"
	var flightNearest []string
	for _, r := range flightRows(t, client, admin, mustInfo(client.Execute(admin, nearest))) {
		flightNearest = append(flightNearest, r[0])
	}
	out, errOut, err = pushdown(t, c, []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}, "query", "-sql", nearest, "-format", "csv")
	if err != nil {
		t.Fatalf("CLI: %v\n%s", err, errOut)
	}
	var cliNearest []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		cliNearest = append(cliNearest, strings.Split(l, ",")[0])
	}
	if len(flightNearest) != 4 || !slices.Equal(flightNearest, cliNearest) {
		t.Errorf("vector search: Flight SQL ids %v, CLI %v", flightNearest, cliNearest)
	}

	// a prepared statement with a parameter
	prep, err := client.Prepare(admin, "SELECT COUNT(*) AS n FROM fsql_it.open_events WHERE tenant_id = ? AND id < 6000")
	if err != nil {
		t.Fatal(err)
	}
	param := paramRecord(t, "tenant-003")
	prep.SetParameters(param)
	param.Release()
	counted := flightRows(t, client, admin, mustInfo(prep.Execute(admin)))
	literal := flightRows(t, client, admin, mustInfo(client.Execute(admin, "SELECT COUNT(*) FROM fsql_it.open_events WHERE tenant_id = 'tenant-003' AND id < 6000")))
	if len(counted) != 1 || counted[0][0] == "0" || !slices.Equal(counted[0], literal[0]) {
		t.Errorf("prepared COUNT(*) %v, literal %v", counted, literal)
	}
	if err := prep.Close(admin); err != nil {
		t.Errorf("close prepared statement: %v", err)
	}

	// bounds: a session holds at most 1,000 prepared statements (the next is
	// RESOURCE_EXHAUSTED, naming the bound), closing one makes room, and
	// another identity is not affected; a syntax error quotes a bounded
	// piece of the statement
	var held []*flightsql.PreparedStatement
	for i := 0; i < 1000; i++ {
		p, err := client.Prepare(admin, "SELECT id FROM fsql_it.open_events WHERE tenant_id = ? AND id > "+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("prepared statement %d of 1000: %v", i+1, err)
		}
		held = append(held, p)
	}
	if _, err := client.Prepare(admin, "SELECT id FROM fsql_it.open_events WHERE tenant_id = ?"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("the 1,001st prepared statement: %v, want ResourceExhausted naming the bound", err)
	}
	if p, err := client.Prepare(alice, "SELECT id FROM fsql_it.open_events WHERE tenant_id = ?"); err != nil {
		t.Errorf("alice's prepared statement while admin holds 1,000: %v", err)
	} else {
		_ = p.Close(alice)
	}
	if err := held[0].Close(admin); err != nil {
		t.Fatal(err)
	}
	if p, err := client.Prepare(admin, "SELECT id FROM fsql_it.open_events WHERE tenant_id = ?"); err != nil {
		t.Errorf("a prepared statement after closing one: %v", err)
	} else {
		held[0] = p
	}
	for _, p := range held {
		_ = p.Close(admin)
	}
	long := strings.Repeat("x", 100_000)
	if _, err := client.Execute(admin, "SELECT id FROM fsql_it.open_events WHERE tenant_id = '"+long+"' '"+long+"'"); status.Code(err) != codes.InvalidArgument || len(err.Error()) > 1000 {
		t.Errorf("a syntax error at a 100 KB literal: %d bytes of message (%v), want InvalidArgument within 1,000 bytes", len(err.Error()), status.Code(err))
	}

	// database/sql through arrow-go's driver
	db, err := sql.Open("flightsql", "flightsql://AKADMIN000000000:admin-secret@"+addr+"?timeout=30s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT status, COUNT(*) AS n FROM fsql_it.open_events GROUP BY status ORDER BY status")
	if err != nil {
		t.Fatalf("database/sql: %v", err)
	}
	total := int64(0)
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if total != int64(spec.Rows) {
		t.Errorf("database/sql GROUP BY status counted %d rows, want %d", total, spec.Rows)
	}

	// refusals: a table alice may not read, unsupported SQL
	// (the Iceberg catalog answers alice as if the table did not exist)
	if n, err := readAll(client, alice, "SELECT COUNT(*) FROM fsql_it.closed_events WHERE id > 5"); status.Code(err) != codes.NotFound && status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice reading closed_events: %d rows, %v; want NotFound or PermissionDenied", n, err)
	}
	if _, err := client.Execute(admin, "SELECT id + 1 FROM fsql_it.open_events"); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `select item "id + 1"`) {
		t.Errorf("unsupported SQL: %v, want InvalidArgument naming the select item", err)
	}

	// a cancelled read ends
	goroutines := func() float64 {
		t.Helper()
		n, ok := harness.Scrape(t, metricsURL).Value("go_goroutines")
		if !ok {
			t.Fatal("the cluster's metrics carry no go_goroutines")
		}
		return n
	}
	idle := goroutines()
	cctx, cancel := context.WithCancel(admin)
	info, err = client.Execute(cctx, "SELECT * FROM fsql_it.open_events")
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := client.DoGet(cctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first record: %v", rdr.Err())
	}
	// the read is running (or, its rows all in flight, just ended): once
	// cancelled it ends, and nothing of it is left to cancel
	res, err := client.CancelFlightInfo(admin, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || (res.Status != flight.CancelStatusCancelled && res.Status != flight.CancelStatusNotCancellable) {
		t.Errorf("cancel the running read: %v %v", res, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for rdr.Next() && time.Now().Before(deadline) {
	}
	if time.Now().After(deadline) {
		t.Errorf("the cancelled read did not end")
	}
	for {
		res, err = client.CancelFlightInfo(admin, &flight.CancelFlightInfoRequest{Info: info})
		if err == nil && res.Status == flight.CancelStatusNotCancellable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled read still runs: %v %v", res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rdr.Release()
	cancel()
	// Streams the caller drops halfway free their work: after twenty of
	// them the server runs about as many goroutines as after the first (a
	// read that left even one behind would add twenty).
	droppedRead := func() {
		t.Helper()
		cctx, cancel := context.WithCancel(admin)
		defer cancel()
		info, err := client.Execute(cctx, "SELECT * FROM fsql_it.open_events")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := client.DoGet(cctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if !rdr.Next() {
			t.Fatalf("no first record: %v", rdr.Err())
		}
		cancel()
		for rdr.Next() {
		}
	}
	// settled is the goroutine count once three scrapes 300 ms apart agree
	// (at most 15 s)
	settled := func() float64 {
		t.Helper()
		n, same := goroutines(), 0
		for end := time.Now().Add(15 * time.Second); same < 2 && time.Now().Before(end); {
			time.Sleep(300 * time.Millisecond)
			if m := goroutines(); m == n {
				same++
			} else {
				n, same = m, 0
			}
		}
		return n
	}
	droppedRead() // connections every read shares are made by the first
	base := settled()
	const reads = 20
	for range reads {
		droppedRead()
	}
	after := settled()
	t.Logf("goroutines: %.0f idle, %.0f after one dropped read, %.0f after %d more", idle, base, after, reads)
	if after-base >= reads/2 {
		t.Errorf("%.0f goroutines after %d dropped reads, %.0f after one: their work was not freed", after, reads, base)
	}
}

func ptr[T any](v T) *T { return &v }

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func metadataCtx(ctx context.Context, auth string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", auth)
}

func mustInfo(info *flight.FlightInfo, err error) *flight.FlightInfo {
	if err != nil {
		panic(err)
	}
	return info
}

func forEachRecord(t *testing.T, client *flightsql.Client, ctx context.Context, info *flight.FlightInfo, fn func(arrow.RecordBatch)) {
	t.Helper()
	for _, ep := range info.Endpoint {
		rdr, err := client.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			fn(rdr.RecordBatch())
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
}

// flightRows reads every record of info as rows of printed values.
func flightRows(t *testing.T, client *flightsql.Client, ctx context.Context, info *flight.FlightInfo) [][]string {
	t.Helper()
	var out [][]string
	forEachRecord(t, client, ctx, info, func(rec arrow.RecordBatch) {
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j := range row {
				row[j] = rec.Column(j).ValueStr(i)
			}
			out = append(out, row)
		}
	})
	return out
}

// readAll runs a query to its end and returns the rows read.
func readAll(client *flightsql.Client, ctx context.Context, q string) (int64, error) {
	info, err := client.Execute(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ep := range info.Endpoint {
		rdr, err := client.DoGet(ctx, ep.Ticket)
		if err != nil {
			return n, err
		}
		for rdr.Next() {
			n += rdr.RecordBatch().NumRows()
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func paramRecord(t *testing.T, v string) arrow.RecordBatch {
	t.Helper()
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(v)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "p1", Type: arrow.BinaryTypes.String}}, nil), []arrow.Array{col}, 1)
}

// adbcPython returns the Python interpreter with the ADBC Flight SQL driver
// pinned (.tools/adbc, made by scripts/install-clients.sh), or skips.
func adbcPython(t *testing.T) string {
	t.Helper()
	const version = "1.13.0"
	py := os.Getenv("LAKEWEED_ADBC_PYTHON")
	if py == "" {
		root, err := harness.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(root, ".tools", "adbc", "bin", "python")
	}
	out, err := exec.Command(py, "-c", "import adbc_driver_flightsql, pyarrow, pandas, polars; print(adbc_driver_flightsql.__version__)").Output()
	if err != nil || strings.TrimSpace(string(out)) != version {
		t.Skipf("Python's ADBC Flight SQL driver %s is missing (%s: %v %s): run .ci/run or scripts/install-clients.sh", version, py, err, strings.TrimSpace(string(out)))
	}
	return py
}

// Python's ADBC Flight SQL driver (with PyArrow, pandas and Polars) reads
// a filter, a GROUP BY and a prepared statement with a parameter, and gets
// the answers the one SQL front end gives in-process.
func TestADBCPythonReadsAFilterAGroupByAndAPreparedStatement(t *testing.T) {
	py := adbcPython(t)
	port := harness.FreePorts(t, 1)[0]
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.flightsql.port=" + strconv.Itoa(port)}})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows = 6_000, 2, 1_500
	const name = "adbc_it.events"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	root, _ := harness.RepoRoot()
	cmd := exec.Command(py, filepath.Join(root, "test", "clients", "adbc", "queries.py"), "--uri", "grpc://127.0.0.1:"+strconv.Itoa(port), "--table", name)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("ADBC client: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		FilterIDs     []int64 `json:"filter_ids"`
		GroupBy       [][]any `json:"group_by"`
		PreparedCount int64   `json:"prepared_count"`
		PolarsTop     [][]any `json:"polars_top"`
		Unsupported   string  `json:"unsupported"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("ADBC client output %q: %v", out, err)
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answer := func(q string) [][]string {
		t.Helper()
		st, err := sqlstmt.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		if _, err := sqlexec.Run(ctx, conn, st, sqlexec.Options{}, func(rec arrow.RecordBatch) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				row := make([]string, rec.NumCols())
				for j := range row {
					row[j] = rec.Column(j).ValueStr(i)
				}
				rows = append(rows, row)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return rows
	}
	var ids []string
	for _, id := range got.FilterIDs {
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	var wantIDs []string
	for _, r := range answer("SELECT id FROM " + name + " WHERE tenant_id = 'tenant-005' AND id < 3000 ORDER BY id") {
		wantIDs = append(wantIDs, r[0])
	}
	if len(ids) == 0 || !slices.Equal(ids, wantIDs) {
		t.Errorf("filter: ADBC %v, in-process %v", ids, wantIDs)
	}
	var groups []string
	for _, r := range got.GroupBy {
		var cells []string
		for _, v := range r {
			cells = append(cells, fmt.Sprint(v))
		}
		groups = append(groups, strings.Join(cells, ","))
	}
	var wantGroups []string
	for _, r := range answer("SELECT status, COUNT(*) AS n, MAX(id) AS top FROM " + name + " GROUP BY status ORDER BY status") {
		wantGroups = append(wantGroups, strings.Join(r, ","))
	}
	if !slices.Equal(groups, wantGroups) {
		t.Errorf("GROUP BY: ADBC %v, in-process %v", groups, wantGroups)
	}
	if want := answer("SELECT COUNT(*) FROM " + name + " WHERE tenant_id = 'tenant-007'"); want[0][0] != strconv.FormatInt(got.PreparedCount, 10) || got.PreparedCount == 0 {
		t.Errorf("prepared COUNT(*): ADBC %d, in-process %v", got.PreparedCount, want)
	}
	if len(got.PolarsTop) != 3 {
		t.Errorf("Polars frame %v, want 3 rows", got.PolarsTop)
	}
	if !strings.Contains(got.Unsupported, `select item "id + 1"`) {
		t.Errorf("unsupported SQL through ADBC: %q, want an error naming the select item", got.Unsupported)
	}
}
