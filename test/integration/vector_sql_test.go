package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// oracleDistance is pgvector's distance in float64: Euclidean, 1 − cos,
// −q·x.
func oracleDistance(m vector.Metric, q, x []float32) float64 {
	var dot, nq, nx, sq float64
	for i := range q {
		a, b := float64(q[i]), float64(x[i])
		dot, nq, nx, sq = dot+a*b, nq+a*a, nx+b*b, sq+(a-b)*(a-b)
	}
	switch m {
	case vector.Cosine:
		if nq == 0 || nx == 0 {
			return 1
		}
		return 1 - dot/math.Sqrt(nq*nx)
	case vector.Dot:
		return -dot
	}
	return math.Sqrt(sq)
}

// sqlOracle is every row of a table by id: its embedding and status.
type sqlOracle struct {
	emb    map[int64][]float32
	status map[int64]string
}

func sqlOracleOf(files []oracleFile) sqlOracle {
	o := sqlOracle{emb: map[int64][]float32{}, status: map[int64]string{}}
	for _, f := range files {
		for p, id := range f.ids {
			o.emb[id] = f.embs[p]
			if s := f.strs["status"]; s != nil {
				o.status[id] = s[p]
			}
		}
	}
	return o
}

// topK is the exact top-k ids (float64) of the rows keep admits, and each
// one's distance.
func (o sqlOracle) topK(m vector.Metric, q []float32, k int, keep func(id int64) bool) ([]int64, []float64) {
	type hit struct {
		id int64
		d  float64
	}
	var all []hit
	for id, e := range o.emb {
		if e != nil && keep(id) {
			all = append(all, hit{id, oracleDistance(m, q, e)})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].d < all[j].d || (all[i].d == all[j].d && all[i].id < all[j].id) })
	var ids []int64
	var ds []float64
	for _, h := range all[:min(k, len(all))] {
		ids, ds = append(ids, h.id), append(ds, h.d)
	}
	return ids, ds
}

// idsAndDistances reads columns id and _distance of a result.
func idsAndDistances(t *testing.T, res *connector.Result) ([]int64, []float32) {
	t.Helper()
	idc, dc := res.Schema.FieldIndices("id"), res.Schema.FieldIndices(connector.DistanceColumn)
	if len(idc) != 1 || len(dc) != 1 {
		t.Fatalf("result schema %s: want id and %s", res.Schema, connector.DistanceColumn)
	}
	var ids []int64
	var ds []float32
	for _, rec := range res.Records {
		ids = append(ids, rec.Column(idc[0]).(*array.Int64).Int64Values()...)
		ds = append(ds, rec.Column(dc[0]).(*array.Float32).Float32Values()...)
	}
	return ids, ds
}

// checkExactTopK checks a vector query's answer against the float64
// oracle: k rows in distance order, each admitted, each _distance the
// row's distance, and the same rows as the oracle's top-k (a row swapped
// with one at the same distance, to float32 precision, is the same answer).
func checkExactTopK(t *testing.T, what string, o sqlOracle, m vector.Metric, q []float32, k int, keep func(int64) bool, ids []int64, ds []float32) {
	t.Helper()
	want, wantD := o.topK(m, q, k, keep)
	if len(ids) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(ids), len(want))
	}
	for i, id := range ids {
		e, ok := o.emb[id]
		if !ok || e == nil || !keep(id) {
			t.Fatalf("%s: row %d id %d is not a row the query admits", what, i, id)
		}
		d := oracleDistance(m, q, e)
		if math.Abs(d-float64(ds[i])) > 1e-3*math.Max(1, math.Abs(d)) {
			t.Fatalf("%s: id %d _distance %v, the oracle says %v", what, id, ds[i], d)
		}
		if i > 0 && float64(ds[i]) < float64(ds[i-1]) {
			t.Fatalf("%s: rows are not in distance order at %d: %v", what, i, ds)
		}
		if id != want[i] && math.Abs(d-wantD[i]) > 1e-5*math.Max(1, math.Abs(d)) {
			t.Fatalf("%s: row %d is id %d at %v; the exact top-%d has id %d at %v there\n got %v\nwant %v", what, i, id, d, k, want[i], wantD[i], ids, want)
		}
	}
}

func vecLiteral(q []float32) string {
	parts := make([]string, len(q))
	for i, x := range q {
		parts[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// SQL vector queries (pgvector's <->, <=>, <#> with a '[…]' or ARRAY[…]
// vector) through the connector return exactly the brute-force top-k rows
// in distance order for every metric — through an ivf index probed on
// every list (built with -param nlist=16), with a residual predicate, and
// through -no-pushdown and ExactVectors — with the distance as _distance
// and vectors_scored in -stats; rows deleted by a position delete never
// come back, and the answer stays k rows.
func TestSQLVectorQueriesReturnTheExactTopKInDistanceOrderForEveryMetric(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vsql_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "12000", "-files", "2",
		"-rowGroupRows", "3000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "embedding", "-kind", "ivf", "-param", "nlist=16,seed=3", "-wait"); err != nil {
		t.Fatalf("index create ivf: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"vsql_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	_, files := tableOracle(t, c, tbl)
	o := sqlOracleOf(files)
	conn, err := connector.New(ctx, connector.Options{Endpoints: e, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	plain, err := connector.New(ctx, connector.Options{Endpoints: e, NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	all := func(int64) bool { return true }
	errorOnly := func(id int64) bool { return o.status[id] == "error" }
	queries := [][]float32{files[0].embs[17], files[1].embs[4242]}
	for qi, q := range queries {
		for _, m := range []vector.Metric{vector.L2, vector.Cosine, vector.Dot} {
			for _, where := range []string{"", "status = 'error'"} {
				keep := all
				if where != "" {
					keep = errorOnly
				}
				what := fmt.Sprintf("query %d %s where %q", qi, m, where)
				cq := connector.Query{Table: name, Where: where, Select: []string{"id", connector.DistanceColumn, "status"}, Limit: 10,
					Vector: &connector.VectorQuery{Column: "embedding", Metric: m, Vector: q, Nprobe: 16}}
				res, err := conn.Query(ctx, cq)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				ids, ds := idsAndDistances(t, res)
				if st := res.Stats; !st.Pushdown || st.VectorStats == nil || st.SearchedBy != "volume" || st.VectorFilesByIndex+st.VectorFilesExact != 2 ||
					(where == "" && st.VectorFilesByIndex != 2) || st.VectorsScored == 0 {
					t.Fatalf("%s: stats %+v %+v: want the volumes to search both files (by their index without a predicate)", what, st, st.VectorStats)
				}
				if names := res.Schema.Fields(); names[0].Name != "id" || names[1].Name != "_distance" || names[2].Name != "status" {
					t.Fatalf("%s: columns %s", what, res.Schema)
				}
				res.Release()
				checkExactTopK(t, what, o, m, q, 10, keep, ids, ds)
				for how, run := range map[string]func() (*connector.Result, error){
					"ExactVectors": func() (*connector.Result, error) { return conn.ExactVectors(ctx, cq) },
					"-no-pushdown": func() (*connector.Result, error) { return plain.Query(ctx, cq) },
				} {
					res, err := run()
					if err != nil {
						t.Fatalf("%s %s: %v", what, how, err)
					}
					bids, _ := idsAndDistances(t, res)
					if res.Stats.VectorStats == nil || res.Stats.SearchedBy != "connector (exact)" || res.Stats.VectorsScored < 10 {
						t.Fatalf("%s %s: stats %+v", what, how, res.Stats.VectorStats)
					}
					res.Release()
					if !slices.Equal(bids, ids) {
						t.Fatalf("%s: %s answered %v, the pushdown %v", what, how, bids, ids)
					}
				}
			}
		}
	}

	// Through the CLI: pgvector's literal and ARRAY[…], csv, -stats.
	q := queries[0]
	sql := fmt.Sprintf("SELECT id, _distance FROM %s ORDER BY embedding <-> '%s' LIMIT 5", name, vecLiteral(q))
	want, _ := o.topK(vector.L2, q, 5, all)
	for _, extra := range [][]string{{"-nprobe", "16"}, {"-no-pushdown"}} {
		args := append([]string{"pushdown", "query", "-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3, "-sql", sql, "-format", "csv", "-stats"}, extra...)
		out, errOut, err := harness.Weed(t, args...)
		if err != nil {
			t.Fatalf("query %v: %v\n%s", extra, err, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if lines[0] != "id,_distance" || len(lines) != 6 {
			t.Fatalf("query %v: csv\n%s", extra, out)
		}
		for i, l := range lines[1:] {
			if id, _, _ := strings.Cut(l, ","); id != fmt.Sprint(want[i]) {
				t.Fatalf("query %v: row %d is %s, want id %d\n%s", extra, i, l, want[i], out)
			}
		}
		statsLine := strings.TrimSpace(errOut)[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]
		var st map[string]any
		if err := json.Unmarshal([]byte(statsLine), &st); err != nil || st["vectors_scored"] == nil || st["vector_files_by_index"] == nil {
			t.Fatalf("query %v: stats line %q (%v): want vectors_scored and vector_files_by_index", extra, statsLine, err)
		}
	}
	arraySQL := strings.Replace(strings.Replace(sql, "'[", "ARRAY[", 1), "]'", "]", 1)
	if out, errOut, err := harness.Weed(t, "pushdown", "query", "-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3, "-sql", arraySQL, "-format", "csv", "-nprobe", "16"); err != nil ||
		!strings.HasPrefix(strings.Split(out, "\n")[1], fmt.Sprint(want[0])+",") {
		t.Fatalf("ARRAY[…] query: %v\n%s%s", err, out, errOut)
	}

	// A position delete of the nearest rows: they never come back, and the
	// answer is still k rows, through the volumes and by brute force.
	deleted := want[:3]
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = deleteWhere(t, tbl, idIn(deleted))
	if !hasDeleteFiles(t, tbl) {
		t.Fatalf("the delete rewrote the data files instead of writing a position delete")
	}
	live := func(id int64) bool { return !slices.Contains(deleted, id) }
	cq := connector.Query{Table: name, Select: []string{"id", connector.DistanceColumn}, Limit: 10,
		Vector: &connector.VectorQuery{Column: "embedding", Metric: vector.L2, Vector: q, Nprobe: 16}}
	for how, run := range map[string]func() (*connector.Result, error){
		"pushdown":     func() (*connector.Result, error) { return conn.Query(ctx, cq) },
		"ExactVectors": func() (*connector.Result, error) { return conn.ExactVectors(ctx, cq) },
		"-no-pushdown": func() (*connector.Result, error) { return plain.Query(ctx, cq) },
	} {
		res, err := run()
		if err != nil {
			t.Fatalf("after the delete, %s: %v", how, err)
		}
		ids, ds := idsAndDistances(t, res)
		res.Release()
		checkExactTopK(t, "after the delete, "+how, o, vector.L2, q, 10, live, ids, ds)
	}
}

// hasDeleteFiles reports whether tbl's current snapshot has delete files.
func hasDeleteFiles(t *testing.T, tbl *table.Table) bool {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if len(task.DeleteFiles) > 0 {
			return true
		}
	}
	return false
}

// Vector queries that cannot be answered are refused naming the problem:
// a vector of the wrong dimension, a column that is not a vector, a
// missing or too large LIMIT, ORDER BY anything but a vector distance.
func TestSQLVectorQueryErrorsNameTheProblem(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vsqlerr_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "3000", "-files", "1",
		"-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	for sql, want := range map[string]string{
		"SELECT id FROM " + name + " ORDER BY embedding <-> '[1, 2, 3]' LIMIT 3":                                 "dimension mismatch: the query vector has 3 dimensions",
		"SELECT id FROM " + name + " ORDER BY status <-> '[1, 2, 3]' LIMIT 3":                                    `column "status" is string, not a vector`,
		"SELECT id FROM " + name + " ORDER BY nope <-> '[1, 2, 3]' LIMIT 3":                                      `no column "nope"`,
		"SELECT id FROM " + name + " ORDER BY embedding <-> '[1, 2, 3]'":                                         "needs LIMIT k (1 to 10000)",
		"SELECT id FROM " + name + " ORDER BY embedding <-> '[1, 2, 3]' LIMIT 20000":                             "want 1 to 10000",
		"SELECT id FROM " + name + " ORDER BY id + 1 LIMIT 3":                                                    `ORDER BY "id + 1" (output columns, aliases, positions and aggregates are) is not supported`,
		"SELECT id FROM " + name + " ORDER BY embedding <-> '[1, " + strings.Repeat("2, ", 4000) + "x]' LIMIT 3": "element 4001",
	} {
		for _, mode := range []string{"-force", "-no-pushdown"} {
			_, errOut, err := harness.Weed(t, "pushdown", "query", "-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3, "-sql", sql, mode)
			if err == nil || !strings.Contains(errOut, want) {
				t.Fatalf("%.80s %s: %v, stderr %q: want it to contain %q", sql, mode, err, errOut, want)
			}
			if len(errOut) > 2000 {
				t.Fatalf("%.80s: the error echoes the query (%d bytes)", sql, len(errOut))
			}
		}
	}
}

// `weed pushdown demo -partition tenant` writes one tenant per file with
// tenant_id an identity partition, so a vector query filtered on a tenant
// searches only that tenant's file (whole, no predicate on the volume):
// through an ivf_pq index built with -param m=8 it returns k rows of that
// tenant, close to the exact answer ExactVectors gives.
func TestDemoPartitionedByTenantSearchesOnlyTheTenantsFiles(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vsqlpart_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "16000", "-files", "4", "-partition", "tenant",
		"-rowGroupRows", "4000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo -partition tenant: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", "vsqlpart_it.bad", "-rows", "100", "-files", "1", "-partition", "status",
		"-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err == nil || !strings.Contains(errOut, `-partition "status": want tenant`) {
		t.Fatalf("-partition status: %v %q", err, errOut)
	}
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "embedding", "-kind", "ivf_pq", "-param", "m=8", "-wait"); err != nil {
		t.Fatalf("index create ivf_pq: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"vsqlpart_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if spec := tbl.Spec(); spec.NumFields() != 1 || spec.Field(0).Name != "tenant_id" || spec.Field(0).Transform.String() != "identity" {
		t.Fatalf("partition spec %v: want identity(tenant_id)", spec)
	}
	paths, files := tableOracle(t, c, tbl)
	tenantFile := -1
	for i, f := range files {
		tenants := map[string]bool{}
		for _, s := range f.strs["tenant_id"] {
			tenants[s] = true
		}
		if len(tenants) != 1 {
			t.Fatalf("%s holds %d tenants, want 1", paths[i], len(tenants))
		}
		if tenants["tenant-050"] {
			tenantFile = i
		}
	}
	if tenantFile < 0 {
		t.Fatalf("no file holds tenant-050")
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: e, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := files[(tenantFile+1)%len(files)].embs[9] // a query from another tenant's cluster
	cq := connector.Query{Table: name, Where: "tenant_id = 'tenant-050'", Select: []string{"id", "tenant_id", connector.DistanceColumn}, Limit: 10,
		Vector: &connector.VectorQuery{Column: "embedding", Metric: vector.L2, Vector: q}}
	res, err := conn.Query(ctx, cq)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := idsAndDistances(t, res)
	st := res.Stats
	tc := res.Schema.FieldIndices("tenant_id")[0]
	for _, rec := range res.Records {
		for r := range int(rec.NumRows()) {
			if v := rec.Column(tc).ValueStr(r); v != "tenant-050" {
				t.Fatalf("row of tenant %s", v)
			}
		}
	}
	res.Release()
	if len(ids) != 10 || st.VectorStats == nil || st.VectorFilesByIndex+st.VectorFilesExact != 1 {
		t.Fatalf("%d rows, stats %+v %+v: want 10 rows from the one file of tenant-050", len(ids), st, st.VectorStats)
	}
	exact, err := conn.ExactVectors(ctx, cq)
	if err != nil {
		t.Fatal(err)
	}
	eids, _ := idsAndDistances(t, exact)
	exact.Release()
	hits := 0
	for _, id := range ids {
		if slices.Contains(eids, id) {
			hits++
		}
	}
	if hits < 8 {
		t.Fatalf("ivf_pq recall@10 %d/10 against the exact answer: %v vs %v", hits, ids, eids)
	}
	t.Logf("ivf_pq over the tenant's file: recall@10 %d/10, %d vectors scored, %d by index", hits, st.VectorsScored, st.VectorFilesByIndex)
}

// A connector keeps a table's metadata between vector queries while the
// plan confirms it current (no LoadTable per query); after another
// writer's commit — the nearest rows deleted, a column added — the next
// vector query loads the new version: the deleted rows do not come back.
func TestVectorQueriesKeepTableMetadataUntilAnotherWriterCommits(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vmeta_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "4000", "-files", "2",
		"-rowGroupRows", "1000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"vmeta_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	_, files := tableOracle(t, c, tbl)
	conn, err := connector.New(ctx, connector.Options{Endpoints: e, NoFallback: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := files[1].embs[123]
	sel := []string{"id"}
	query := func(wantCached bool) []int64 {
		t.Helper()
		res, err := conn.Query(ctx, connector.Query{Table: name, Select: sel, Limit: 5,
			Vector: &connector.VectorQuery{Column: "embedding", Metric: vector.L2, Vector: q}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		if res.NumRows() != 5 || res.Stats.MetadataCached != wantCached || res.Stats.VectorStats == nil || res.Stats.SearchedBy != "volume" {
			t.Fatalf("%d rows, metadata cached %v, stats %+v; want 5 rows searched on the volume, cached %v", res.NumRows(), res.Stats.MetadataCached, res.Stats.VectorStats, wantCached)
		}
		ids := make([]int64, 0, 5)
		col := res.Records[0].Column(0).(*array.Int64)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
		return ids
	}
	first := query(false) // loaded
	if again := query(true); !slices.Equal(again, first) {
		t.Fatalf("the cached metadata answered %v, the loaded %v", again, first)
	}
	// a position delete (iceberg-go cannot rewrite fixed_size_list files)
	mor := tbl.NewTransaction()
	if err := mor.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = mor.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	query(false) // a property change is a commit too
	tbl = deleteWhere(t, tbl, idIn(first[:2]))
	after := query(false) // another writer committed: loaded again
	if slices.Contains(after, first[0]) || slices.Contains(after, first[1]) || !slices.Equal(after[:3], first[2:]) {
		t.Fatalf("after deleting %v the answer is %v (before %v)", first[:2], after, first)
	}
	query(true)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := query(false); !slices.Equal(got, after) {
		t.Fatalf("with the added column the answer is %v, want %v", got, after)
	}
	query(true)
}
