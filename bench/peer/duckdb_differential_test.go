package peer

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// The connector (pushdown in page-aware and row-group mode, and pushdown
// off) and DuckDB, reading the same Parquet files through `weed mount`,
// answer the same random SQL predicates with the same rows: the sorted id
// lists must be equal. One WHERE text serves both (the SQL both dialects
// share: comparisons, IN, BETWEEN, IS [NOT] NULL, LIKE 'prefix%', AND, OR,
// NOT, TIMESTAMP literals). LAKEWEED_DIFF_PREDICATES sets the count
// (default 200); LAKEWEED_DIFF_ROWS the rows (default 200,000).
func TestConnectorAgreesWithDuckDBOnRandomPredicates(t *testing.T) {
	requireBenchAsRoot(t, "runs with `make bench` (LAKEWEED_BENCH=1): needs DuckDB and weed mount")
	n := envInt("LAKEWEED_DIFF_PREDICATES", 200)
	rows := int64(envInt("LAKEWEED_DIFF_ROWS", 200_000))
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.Indexed = rows, 6, demo.IndexedHalf
	res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "diff.events", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := benchutil.MountTableData(t, c, res.Location, "mnt")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	readers := map[string]*connector.Connector{}
	for name, o := range map[string]connector.Options{
		"page-aware":  {Mode: connector.PageAware, Force: true, NoFallback: true},
		"row-group":   {Mode: connector.RowGroup, Force: true, NoFallback: true},
		"no pushdown": {NoPushdown: true},
	} {
		o.Endpoints = c.Endpoints()
		conn, err := connector.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		readers[name] = conn
	}
	r := rand.New(rand.NewPCG(7, uint64(n)))
	gen := predicateGen{r: r, rows: rows, start: spec.StartTime, span: time.Duration(rows) * 250 * time.Millisecond}
	matchedTotal, empty := 0, 0
	for i := 0; i < n; i++ {
		where := gen.expr(2)
		want, err := duckIDs(db, dir, where)
		if err != nil {
			t.Fatalf("DuckDB: WHERE %s: %v", where, err)
		}
		matchedTotal += len(want)
		if len(want) == 0 {
			empty++
		}
		for name, conn := range readers {
			got, err := connectorIDs(ctx, conn, where)
			if err != nil {
				t.Errorf("%s: WHERE %s: %v", name, where, err)
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: WHERE %s: %d rows, DuckDB %d", name, where, len(got), len(want))
			}
		}
	}
	t.Logf("%d random predicates over %d rows: DuckDB and the connector (page-aware, row-group, no pushdown) agreed; %d rows matched in all, %d predicates matched nothing",
		n, rows, matchedTotal, empty)
}

// requireBenchAsRoot skips unless LAKEWEED_BENCH is set (saying why) and
// the test runs as root (weed mount needs FUSE).
func requireBenchAsRoot(t *testing.T, why string) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		t.Skip("weed mount (FUSE) needs root here")
	}
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

func duckIDs(db *sql.DB, dir, where string) ([]int64, error) {
	rs, err := db.Query(fmt.Sprintf("SELECT id FROM read_parquet('%s/*.parquet') WHERE %s", dir, where))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out, rs.Err()
}

func connectorIDs(ctx context.Context, conn *connector.Connector, where string) ([]int64, error) {
	res, err := conn.Query(ctx, connector.Query{Table: "diff.events", Where: where, Select: []string{"id"}})
	if err != nil {
		return nil, err
	}
	defer res.Release()
	var out []int64
	for _, rec := range res.Records {
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.Value(i))
		}
	}
	slices.Sort(out)
	return out, nil
}

// predicateGen draws random WHERE clauses over the demo columns, with
// literals near the data (so that results are neither always empty nor
// always everything).
type predicateGen struct {
	r     *rand.Rand
	rows  int64
	start time.Time
	span  time.Duration
}

func (g predicateGen) ts() string {
	t := g.start.Add(time.Duration(g.r.Int64N(int64(g.span)*11/10)) - g.span/20)
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'"
}

func (g predicateGen) id() string {
	return strconv.FormatInt(g.r.Int64N(g.rows+g.rows/10)-g.rows/20, 10)
}

func (g predicateGen) tenant() string {
	return "'" + demo.TenantName(g.r.IntN(110)) + "'" // a few tenants do not exist
}

func (g predicateGen) status() string {
	s := append(append([]string{}, demo.Statuses...), "missing")
	return "'" + s[g.r.IntN(len(s))] + "'"
}

func (g predicateGen) leaf() string {
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	op := ops[g.r.IntN(len(ops))]
	switch g.r.IntN(12) {
	case 0:
		return "id " + op + " " + g.id()
	case 1:
		return fmt.Sprintf("id IN (%s, %s, %s)", g.id(), g.id(), g.id())
	case 2:
		return fmt.Sprintf("id BETWEEN %s AND %s", g.id(), g.id())
	case 3:
		return "ts " + op + " " + g.ts()
	case 4:
		return fmt.Sprintf("ts BETWEEN %s AND %s", g.ts(), g.ts())
	case 5:
		return "tenant_id " + op + " " + g.tenant()
	case 6:
		return fmt.Sprintf("tenant_id IN (%s, %s)", g.tenant(), g.tenant())
	case 7:
		return "status " + op + " " + g.status()
	case 8:
		return fmt.Sprintf("status NOT IN (%s, %s)", g.status(), g.status())
	case 9:
		return fmt.Sprintf("tenant_id LIKE 'tenant-0%d%%'", g.r.IntN(10))
	case 10:
		if g.r.IntN(2) == 0 {
			return "message IS NULL"
		}
		return "message IS NOT NULL"
	default:
		return fmt.Sprintf("message LIKE '%s%%'", []string{"GET", "POST /api/v1", "DELETE /healthz", "PUT /api/v2/search/1"}[g.r.IntN(4)])
	}
}

func (g predicateGen) expr(depth int) string {
	if depth == 0 || g.r.IntN(3) == 0 {
		return g.leaf()
	}
	switch g.r.IntN(3) {
	case 0:
		return "(" + g.expr(depth-1) + " AND " + g.expr(depth-1) + ")"
	case 1:
		return "(" + g.expr(depth-1) + " OR " + g.expr(depth-1) + ")"
	default:
		return "NOT (" + g.expr(depth-1) + ")"
	}
}
