package vectorbench

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	vectors "github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// connFigures are the connector's figures for one query kind: the median
// warm latency (the second run of each query), the median first run (the
// connector's caches empty, the cluster warm), mean recall@10 of the ids
// against the oracle, mean vectors scored (exact, and PQ) and files
// searched by index and exactly.
type connFigures struct {
	warm, first, recall, scored, approx, byIndex, exact float64
	filesPruned, maxProbed                              float64 // files the bound skipped whole, most lists one file probed
}

// connectorLatency runs `SELECT id … [WHERE f.where] ORDER BY embedding
// <-> q LIMIT 10` for the first queries on one connector: exactly
// (ExactVectors: every matching vector read through the connector's
// planned read and scored there — the brute force a user gets with
// -no-pushdown) or through the plan's fused top-k (the volume's index
// search, nprobe 0: the index's default). Each query runs after a
// warm-up query on the same connector and filter with another vector
// (the query's elements reversed: other neighbours), so the warm figure
// is a vector never asked before on warm table caches — what a user
// asking new vectors gets, not a repeat.
func connectorLatency(t *testing.T, c *harness.Cluster, ds *dataset, f filter, queries int, exact bool, nprobe int) connFigures {
	ctx := context.Background()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var lat, first, rec, scored, approx, byIndex, byExact, pruned, probed []float64
	for qi := range min(queries, len(ds.queries)) {
		q := connector.Query{Table: ds.table, Select: []string{"id"}, Where: f.where, Limit: 10,
			Vector: &connector.VectorQuery{Column: "embedding", Metric: vectors.L2, Vector: ds.queries[qi], Nprobe: nprobe}}
		for i := range 2 {
			if i == 0 {
				warmup := slices.Clone(ds.queries[qi])
				slices.Reverse(warmup)
				q.Vector = &connector.VectorQuery{Column: "embedding", Metric: vectors.L2, Vector: warmup, Nprobe: nprobe}
			} else {
				q.Vector = &connector.VectorQuery{Column: "embedding", Metric: vectors.L2, Vector: ds.queries[qi], Nprobe: nprobe}
			}
			t0 := time.Now()
			var res *connector.Result
			if exact {
				res, err = conn.ExactVectors(ctx, q)
			} else {
				res, err = conn.Query(ctx, q)
			}
			if err != nil {
				t.Fatalf("%s %s query %d (exact %v): %v", ds.name, f.name, qi, exact, err)
			}
			d := ms(time.Since(t0))
			if res.NumRows() != 10 {
				t.Fatalf("%s %s query %d (exact %v): %d rows, want 10", ds.name, f.name, qi, exact, res.NumRows())
			}
			if i == 0 {
				first = append(first, d)
				res.Release()
				continue
			}
			lat = append(lat, d)
			var ids []string
			for _, r := range res.Records {
				col := r.Column(0).(*array.Int64)
				for j := range col.Len() {
					ids = append(ids, strconv.FormatInt(col.Value(j), 10))
				}
			}
			want := ds.truthIDs(qi, f)
			n := 0
			for _, id := range ids {
				if slices.Contains(want, id) {
					n++
				}
			}
			rec = append(rec, float64(n)/float64(max(1, len(want))))
			if vs := res.Stats.VectorStats; vs != nil {
				scored, approx = append(scored, float64(vs.VectorsScored)), append(approx, float64(vs.VectorsApprox))
				byIndex = append(byIndex, float64(vs.VectorFilesByIndex))
				byExact = append(byExact, float64(vs.VectorFilesExact))
				pruned, probed = append(pruned, float64(vs.FilesPruned)), append(probed, float64(vs.MaxListsProbed))
			}
			res.Release()
		}
	}
	return connFigures{warm: median(lat), first: median(first), recall: mean(rec), scored: mean(scored), approx: mean(approx), byIndex: mean(byIndex), exact: mean(byExact),
		filesPruned: mean(pruned), maxProbed: mean(probed)}
}

// warmProjectedRowGroups runs, untimed, one index query under f whose
// top 1,000 spread over the filter's files: a vector none of the measured
// queries asks (the first query's elements reversed). The volume then
// holds the projected columns of the row groups the measured queries'
// winners fall in, as a warm cluster does — without asking any measured
// query beforehand (the first index pass used to decode them, about a
// millisecond a file, which charged whichever figure was measured first).
func warmProjectedRowGroups(t *testing.T, c *harness.Cluster, ds *dataset, f filter) {
	ctx := context.Background()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	v := slices.Clone(ds.queries[0])
	slices.Reverse(v)
	res, err := conn.Query(ctx, connector.Query{Table: ds.table, Select: []string{"id"}, Where: f.where, Limit: 1000,
		Vector: &connector.VectorQuery{Column: "embedding", Metric: vectors.L2, Vector: v}})
	if err != nil {
		t.Fatalf("%s %s: warm-up of the projected row groups: %v", ds.name, f.name, err)
	}
	res.Release()
}
