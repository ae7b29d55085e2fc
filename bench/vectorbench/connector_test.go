package vectorbench

import (
	"context"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	vectors "github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// connectorLatency is the median warm latency of the connector answering
// `SELECT id … ORDER BY embedding <-> q LIMIT 10` for the first queries:
// exactly (ExactVectors: every vector read through the connector's planned
// read and scored there — the brute force a user gets with -no-pushdown)
// or through the plan's fused top-k (the volume's index search). Each
// query runs twice on one connector; the second (its bytes cached) is
// measured.
func connectorLatency(t *testing.T, c *harness.Cluster, ds *dataset, queries int, exact bool) float64 {
	ctx := context.Background()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var lat []float64
	for qi := range min(queries, len(ds.queries)) {
		q := connector.Query{Table: ds.table, Select: []string{"id"}, Limit: 10,
			Vector: &connector.VectorQuery{Column: "embedding", Metric: vectors.L2, Vector: ds.queries[qi]}}
		for i := range 2 {
			t0 := time.Now()
			var res *connector.Result
			if exact {
				res, err = conn.ExactVectors(ctx, q)
			} else {
				res, err = conn.Query(ctx, q)
			}
			if err != nil {
				t.Fatalf("%s query %d (exact %v): %v", ds.name, qi, exact, err)
			}
			if res.NumRows() != 10 {
				t.Fatalf("%s query %d (exact %v): %d rows, want 10", ds.name, qi, exact, res.NumRows())
			}
			res.Release()
			if i == 1 {
				lat = append(lat, ms(time.Since(t0)))
			}
		}
	}
	return median(lat)
}
