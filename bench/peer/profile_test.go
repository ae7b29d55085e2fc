package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// TestPeerWarmQueryProfile writes CPU profiles of the connector (in this
// process) answering one peer query warm for 10 s, and the cluster's over
// the same seconds: prefix.pprof and prefix.cluster.pprof
// (LAKEWEED_BENCH_PROFILE=prefix). LAKEWEED_PEER_PROFILE_MODE picks the
// table (all, half, none, side; default all), LAKEWEED_PEER_PROFILE_QUERY
// the query by name (default "LIMIT 10 of status equality"),
// LAKEWEED_BENCH_ROWS its size (default 1,000,000); with
// LAKEWEED_PEER_PROFILE_COLD=1 each query runs on a fresh connector (the
// bench's cold reads, the cluster warm); LAKEWEED_PEER_PROFILE_COUNT_WHERE
// profiles a COUNT(*) with that WHERE instead:
//
//	LAKEWEED_BENCH=1 LAKEWEED_BENCH_PROFILE=/tmp/peer go test -run TestPeerWarmQueryProfile -v ./
func TestPeerWarmQueryProfile(t *testing.T) {
	c, port, out := benchutil.ProfiledMini(t)
	ctx := context.Background()
	rows := int64(envInt("LAKEWEED_BENCH_ROWS", 1_000_000))
	mode := envOr("LAKEWEED_PEER_PROFILE_MODE", "all")
	qname := envOr("LAKEWEED_PEER_PROFILE_QUERY", "LIMIT 10 of status equality")
	var q *query
	for _, cand := range queries(rows) {
		if cand.name == qname {
			q = &cand
		}
	}
	if q == nil {
		t.Fatalf("no peer query named %q", qname)
	}
	spec := demo.DefaultSpec()
	spec.Rows, spec.Indexed = rows, demo.Indexed(mode)
	if mode == sideMode {
		spec.Indexed = demo.IndexedNone
	}
	name := "peer." + mode
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: name, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	if mode == sideMode {
		createSideIndexes(t, c, name)
	}
	// LAKEWEED_PEER_PROFILE_COUNT_WHERE: a COUNT(*) with this WHERE
	// instead (the aggregates benchmark's filtered counts)
	countOnly := false
	if where := os.Getenv("LAKEWEED_PEER_PROFILE_COUNT_WHERE"); where != "" {
		q = &query{name: "COUNT(*) WHERE " + where, where: where, sel: []string{"id"}} // a count plans the predicate's columns alone
		countOnly = true
	}
	// LAKEWEED_PEER_PROFILE_SQL: this SQL (%s the table) through the SQL
	// front end instead, aggregates on the volumes
	// (LAKEWEED_PEER_PROFILE_AGGREGATE_AT: here, volume, auto)
	var stmt *sqlstmt.Statement
	if text := os.Getenv("LAKEWEED_PEER_PROFILE_SQL"); text != "" {
		var err error
		if stmt, err = sqlstmt.Parse(fmt.Sprintf(text, name)); err != nil {
			t.Fatal(err)
		}
		qname = text
	}
	site, err := connector.ParseAggregateSite(envOr("LAKEWEED_PEER_PROFILE_AGGREGATE_AT", "volume"))
	if err != nil {
		t.Fatal(err)
	}
	cold := os.Getenv("LAKEWEED_PEER_PROFILE_COLD") != ""
	var last connector.Stats
	run := func() {
		conn := connectorFor(t, c, cold)
		if cold {
			defer conn.Close()
		}
		if stmt != nil {
			res, err := sqlexec.Run(ctx, conn, stmt, sqlexec.Options{AggregateAt: site}, func(arrow.RecordBatch) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			last = res.Stats.Stats
			return
		}
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.where, Select: q.sel, Limit: q.limit, CountOnly: countOnly})
		if err != nil {
			t.Fatal(err)
		}
		last = res.Stats
		res.Release()
	}
	for w := 0; w < 5; w++ {
		run()
	}
	if st, err := json.Marshal(last); err == nil {
		t.Logf("stats of a warm query: %s", st)
	}
	w := benchutil.ProfileWarm(t, port, c.Proc.Cmd.Process.Pid, out+".pprof", out+".cluster.pprof", run)
	t.Logf("%s %s (cold %v): %d queries, median %.2f ms, CPU a query %.2f ms here + %.2f ms cluster (load %s); profiles %s.pprof (connector), %s.cluster.pprof (cluster)",
		mode, qname, cold, len(w.Latencies), w.P50(), w.SelfCPUMs, w.ClusterCPU, benchutil.LoadAverage(), out, out)
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
