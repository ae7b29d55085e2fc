package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// A COUNT(*) the plan cannot answer (a predicate no side index answers
// exactly) is planned once: the plan it was tried on is the one the
// volumes' aggregation uses, not made again — one Plan call a query on the
// catalog — and the count is the rows' (a -no-pushdown read's), on every
// aggregation site.
func TestACountThePlanCannotAnswerIsPlannedOnce(t *testing.T) {
	o := harness.MiniOptions{}
	url := harness.WithMetrics(t, &o)
	c := harness.StartMini(t, o)
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 30_000, 3, 5_000, demo.IndexedNone
	const table = "countplan.events"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: table, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	count := func(conn *connector.Connector, o sqlexec.Options) (int64, sqlexec.Stats) {
		t.Helper()
		st, err := sqlstmt.Parse("SELECT COUNT(*) FROM " + table + " WHERE status = 'error'")
		if err != nil {
			t.Fatal(err)
		}
		var n int64 = -1
		res, err := sqlexec.Run(ctx, conn, st, o, func(rec arrow.RecordBatch) error {
			n = rec.Column(0).(*array.Int64).Value(0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, res.Stats
	}
	plain, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	want, _ := count(plain, sqlexec.Options{NoMetadataAnswers: true})
	if want <= 0 || want >= int64(spec.Rows) {
		t.Fatalf("the plain count %d: the predicate selects no or every row", want)
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	count(conn, sqlexec.Options{}) // table metadata and footers cached
	plans := func() float64 {
		v, _ := harness.Scrape(t, url).Value("SeaweedFS_pushdown_rpc_requests_total", "service", "catalog", "method", "Plan", "code", "OK")
		return v
	}
	for _, site := range []connector.AggregateSite{connector.AggregateAuto, connector.AggregateVolume} {
		before := plans()
		got, st := count(conn, sqlexec.Options{AggregateAt: site})
		if got != want {
			t.Fatalf("aggregateAt %s: COUNT(*) %d, the rows hold %d", site, got, want)
		}
		if st.CountNote == "" {
			t.Fatalf("aggregateAt %s: the plan answered the count (%s): the test needs one it cannot", site, st.AnsweredBy)
		}
		if n := plans() - before; n != 1 {
			t.Fatalf("aggregateAt %s: %v Plan calls for one COUNT(*), want 1", site, n)
		}
	}
}

// MIN and MAX of a string column read here (whose decoded buffers the
// connector reuses row group after row group), and the rows an ORDER BY of
// it keeps, are those a plain read gives, not bytes of a later row group.
func TestStringMinAndMaxReadHereEqualAPlainRead(t *testing.T) {
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 60_000, 2, 10_000, demo.IndexedNone
	const table = "minmax.events"
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: table, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	answer := func(conn *connector.Connector, o sqlexec.Options) []string {
		t.Helper()
		var out []string
		for _, sql := range []string{
			"SELECT MIN(message), MAX(message), MIN(tenant_id), MAX(status) FROM " + table + " WHERE id >= 0",
			// the sorter holds the records it is handed: their strings too
			"SELECT id, message FROM " + table + " WHERE id >= 0 ORDER BY message DESC, id LIMIT 7",
		} {
			st, err := sqlstmt.Parse(sql)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sqlexec.Run(ctx, conn, st, o, func(rec arrow.RecordBatch) error {
				for i := 0; i < int(rec.NumRows()); i++ {
					for j := 0; j < int(rec.NumCols()); j++ {
						out = append(out, rec.Column(j).ValueStr(i))
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	plain, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	want := answer(plain, sqlexec.Options{AggregateAt: connector.AggregateHere})
	for i := 0; i < 3; i++ { // warm: the pool holds the buffers of earlier reads
		if got := answer(conn, sqlexec.Options{AggregateAt: connector.AggregateHere}); !slices.Equal(got, want) {
			t.Fatalf("read %d here: %q, a plain read: %q", i+1, got, want)
		}
	}
}
