package peer

import (
	"context"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// TestPeerWarmQueryProfile writes CPU profiles of the connector (in this
// process) answering one peer query warm for 10 s, and the cluster's over
// the same seconds: prefix.pprof and prefix.cluster.pprof
// (LAKEWEED_BENCH_PROFILE=prefix). LAKEWEED_PEER_PROFILE_MODE picks the
// table (all, half, none, side; default all), LAKEWEED_PEER_PROFILE_QUERY
// the query by name (default "LIMIT 10 of status equality"),
// LAKEWEED_BENCH_ROWS its size (default 1,000,000):
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
	conn := connectorFor(t, c, false)
	run := func() {
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.where, Select: q.sel, Limit: q.limit})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	for w := 0; w < 5; w++ {
		run()
	}
	f, err := os.Create(out + ".pprof")
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	cluster := make(chan []byte, 1)
	go func() {
		b, err := benchutil.FetchCPUProfile(port, 10)
		if err != nil {
			t.Logf("cluster profile: %v", err)
		}
		cluster <- b
	}()
	var lat []float64
	for t0 := time.Now(); time.Since(t0) < 10*time.Second; {
		t1 := time.Now()
		run()
		lat = append(lat, float64(time.Since(t1).Microseconds())/1000)
	}
	pprof.StopCPUProfile()
	f.Close()
	if err := os.WriteFile(out+".cluster.pprof", <-cluster, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: %d warm queries, median %.2f ms; profiles %s.pprof (connector), %s.cluster.pprof (cluster)", mode, qname, len(lat), benchutil.Median(lat), out, out)
}

func envOr(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
