package integration

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// vectorPlan plans a k-nearest query by L2 over column embedding of
// table name, restricted by an Iceberg JSON predicate ("" = none).
func vectorPlan(t *testing.T, c *harness.Cluster, name string, q []float32, k int32, pred string) (*pushdown_pb.ParquetPushdownResponse, error) {
	t.Helper()
	req := &pushdown_pb.ParquetPushdownRequest{Table: name, VectorQuery: &pushdown_pb.VectorQuery{
		Column: &pushdown_pb.ColumnRef{Path: "embedding"}, Vector: q, Metric: pushdown_pb.VectorMetric_METRIC_L2, TopK: k}}
	if pred != "" {
		req.PredicateKind, req.Predicate = pushdown_pb.PredicateKind_PREDICATE_ICEBERG, []byte(pred)
	}
	return c.Catalog(t).Plan(context.Background(), req)
}

// filteredCase is a predicate and the oracle's view of it.
type filteredCase struct {
	name  string
	pred  string
	match func(o oracleFile, pos int) bool
}

// checkFilteredPlan compares a vector plan's row refs with the brute-force
// top-k over the matching rows: every returned row matches, there are
// min(k, matching) of them, the mask of every searched file held exactly
// its matching rows, and the returned fraction of the oracle's rows (1 for
// an exact search) is returned.
func checkFilteredPlan(t *testing.T, what string, resp *pushdown_pb.ParquetPushdownResponse, oracle []oracleFile, paths []string,
	want []oracleHit, fc filteredCase) float64 {
	t.Helper()
	if len(resp.GetRowRefs()) != len(want) {
		t.Fatalf("%s: %d rows, the %d matching rows' top-k has %d", what, len(resp.GetRowRefs()), countMatching(oracle, fc), len(want))
	}
	in := map[[2]int64]bool{}
	for _, w := range want {
		in[[2]int64{int64(w.file), w.pos}] = true
	}
	hits := 0
	for i, r := range resp.GetRowRefs() {
		fi := slices.Index(paths, r.GetRef().GetFile())
		pos := r.GetRef().GetFilePosition()
		if fi < 0 || !r.GetHasScore() || (i > 0 && r.GetScore() < resp.GetRowRefs()[i-1].GetScore()) {
			t.Fatalf("%s: row ref %d %+v is not a scored ref of a table file in distance order", what, i, r)
		}
		if !fc.match(oracle[fi], int(pos)) {
			t.Fatalf("%s: row %d of %s (id %d) does not match %s", what, pos, paths[fi], oracle[fi].ids[pos], fc.pred)
		}
		if in[[2]int64{int64(fi), pos}] {
			hits++
		}
	}
	st := resp.GetStats().GetVector()
	searched := map[string]*pushdown_pb.VectorFilePlan{}
	for _, f := range st.GetFiles() {
		searched[f.GetFile()] = f
	}
	total := int64(0)
	for fi, o := range oracle {
		n := int64(0)
		for p := range o.ids {
			if fc.match(o, p) {
				n++
			}
		}
		total += n
		f, ok := searched[paths[fi]]
		switch {
		case !ok && n > 0:
			t.Fatalf("%s: %s holds %d matching rows but was not searched (stats %+v)", what, paths[fi], n, st)
		case ok && f.GetMaskRows() != n:
			t.Fatalf("%s: the mask of %s held %d rows, %d match (%+v)", what, paths[fi], f.GetMaskRows(), n, f)
		}
	}
	if st.GetMaskRows() != total {
		t.Fatalf("%s: stats say the masks held %d rows, %d match", what, st.GetMaskRows(), total)
	}
	return float64(hits) / float64(max(1, len(want)))
}

// tableOracle reads every data file of tbl with arrow-go, in path order.
func tableOracle(t *testing.T, c *harness.Cluster, tbl *table.Table) ([]string, []oracleFile) {
	t.Helper()
	paths := filesOf(t, tbl)
	sort.Strings(paths)
	var oracle []oracleFile
	for _, p := range paths {
		oracle = append(oracle, readOracleFile(t, c, p))
	}
	return paths, oracle
}

func countMatching(oracle []oracleFile, fc filteredCase) int {
	n := 0
	for _, o := range oracle {
		for p := range o.ids {
			if fc.match(o, p) {
				n++
			}
		}
	}
	return n
}

// A vector plan whose predicate no side index answers (tenant_id and
// status of the demo table, id < 5) is searched over exactly the matching
// rows: the volume evaluates the predicate on the rows the scalar tiers
// left before the masked search, so the plan returns the brute-force top-k
// of the matching rows (exactly without an index, recall ≥ 0.9 with ivf),
// all of them when fewer than k match, and says how many rows each mask
// held; a predicate with a part no one can evaluate is refused.
func TestFilteredVectorPlansReturnTheBruteForceTopKOfTheMatchingRows(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vecf_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "40000", "-files", "4",
		"-rowGroupRows", "4000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"vecf_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	paths, oracle := tableOracle(t, c, tbl)
	cases := []filteredCase{
		{"tenant", `{"type":"eq","term":{"field-id":3},"value":"tenant-042"}`,
			func(o oracleFile, p int) bool { return o.strs["tenant_id"][p] == "tenant-042" }},
		{"status and tenant", `{"type":"and","left":{"type":"eq","term":{"field-id":4},"value":"error"},"right":{"type":"eq","term":{"field-id":3},"value":"tenant-042"}}`,
			func(o oracleFile, p int) bool {
				return o.strs["status"][p] == "error" && o.strs["tenant_id"][p] == "tenant-042"
			}},
		{"fewer than k", `{"type":"lt","term":{"field-id":1},"value":5}`,
			func(o oracleFile, p int) bool { return o.ids[p] < 5 }},
	}
	// Queries near a tenant-042 row and near a row of a tenant far from it
	// (its matching neighbours are far away).
	var near, far []float32
	for fi, o := range oracle {
		for p := range o.ids {
			if near == nil && o.strs["tenant_id"][p] == "tenant-042" {
				near = slices.Clone(oracle[fi].embs[p])
			}
			if far == nil && o.strs["tenant_id"][p] == "tenant-007" {
				far = slices.Clone(oracle[fi].embs[p])
			}
		}
	}
	near[0] += 0.05
	queries := [][]float32{near, far}
	const k = 10
	run := func(phase string, exact bool) {
		var recallSum float64
		n := 0
		for _, fc := range cases {
			if got := countMatching(oracle, fc); (fc.name == "fewer than k") != (got < k) {
				t.Fatalf("case %s matches %d rows", fc.name, got)
			}
			for qi, q := range queries {
				what := fmt.Sprintf("%s, %s, query %d", phase, fc.name, qi)
				resp, err := vectorPlan(t, c, name, q, k, fc.pred)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				want := bruteForceL2(oracle, q, k, func(f int, p int64) bool { return fc.match(oracle[f], int(p)) })
				r := checkFilteredPlan(t, what, resp, oracle, paths, want, fc)
				if (exact || fc.name == "fewer than k") && r != 1 {
					t.Fatalf("%s: recall %.2f of an exact search", what, r)
				}
				if st := resp.GetStats().GetVector(); st.GetFilesFiltered() == 0 {
					t.Fatalf("%s: no file had the predicate evaluated on the volume: %+v", what, st)
				}
				recallSum += r
				n++
				t.Logf("%s: recall %.2f, %d vectors scored, masks held %d rows", what, r, resp.GetStats().GetVector().GetVectorsScored(), resp.GetStats().GetVector().GetMaskRows())
			}
		}
		if r := recallSum / float64(n); r < 0.9 {
			t.Fatalf("%s: mean recall@10 %.2f, want ≥ 0.9", phase, r)
		}
	}
	run("exact", true)
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "embedding", "-kind", "ivf", "-wait"); err != nil {
		t.Fatalf("index create ivf: %v\n%s%s", err, out, errOut)
	}
	run("ivf", false)
	// The volume's vector cache holds the files' vectors and the
	// predicates' answers, and says so in Status (and so in /metrics).
	if vc := volumeCache(t, c.VolumePushdownAddr(), "vectors"); vc.GetEntries() < int64(len(paths)) || vc.GetBytes() < int64(len(paths))*10000*64*4 ||
		vc.GetHits() == 0 || vc.GetCapacityBytes() == 0 {
		t.Fatalf("the volume's vectors cache after filtered plans over %d files: %+v", len(paths), vc)
	}
	// Masks no larger than what an unmasked search scores (at least
	// DefaultMinScored rows of a file) are scanned exactly; an 80% one is
	// searched through the index, with recall.
	unselective := filteredCase{"status", `{"type":"not-eq","term":{"field-id":4},"value":"error"}`,
		func(o oracleFile, p int) bool { return o.strs["status"][p] != "error" }}
	resp, err := vectorPlan(t, c, name, near, k, unselective.pred)
	if err != nil {
		t.Fatal(err)
	}
	want := bruteForceL2(oracle, near, k, func(f int, p int64) bool { return unselective.match(oracle[f], int(p)) })
	if r := checkFilteredPlan(t, "status != 'error'", resp, oracle, paths, want, unselective); r < 0.9 || resp.GetStats().GetVector().GetFilesByIndex() == 0 {
		t.Fatalf("status != 'error' after the ivf build: recall %.2f, %+v", r, resp.GetStats().GetVector())
	}

	// A predicate with a part no tier and no volume can evaluate is
	// refused, naming it, rather than answered with rows that might not match.
	_, err = vectorPlan(t, c, name, near, k, `{"type":"and","left":{"type":"eq","term":{"field-id":3},"value":"tenant-042"},"right":{"type":"mystery"}}`)
	if err == nil || !strings.Contains(err.Error(), "mystery") || !strings.Contains(err.Error(), "exactly") {
		t.Fatalf("a predicate with an unknown part: %v", err)
	}
}

// A vector plan whose predicate is only on an identity-partition column
// searches the files whose partition value matches, whole and without a
// predicate on the volume (every row of such a file matches); one that
// also needs a data column has the volume evaluate it. Both return the
// brute-force top-k of the matching rows.
func TestVectorPlansOverAnIdentityPartitionSearchMatchingFilesWholeWithoutAPredicate(t *testing.T) {
	c := sharedCluster(t)
	tbl := createIdentityPartitioned(t, c, "vecp_it", "parts", 2, "part",
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "part", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "cat", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "embedding", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}},
	)
	const dim, rows = 8, 400
	fid := parquetFieldID
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("1")},
		{Name: "part", Type: arrow.BinaryTypes.String, Metadata: fid("2")},
		{Name: "cat", Type: arrow.BinaryTypes.String, Metadata: fid("3")},
		{Name: "embedding", Type: arrow.FixedSizeListOfField(dim, arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Metadata: fid("5")}), Nullable: true, Metadata: fid("4")},
	}, nil)
	r := rand.New(rand.NewPCG(7, 11))
	var datas [][]byte
	var parts []map[int]any
	for i, part := range []string{"a", "b", "c"} {
		// Four row groups, each written as its own record.
		var recs []arrow.RecordBatch
		for g := range 4 {
			b := array.NewRecordBuilder(memory.DefaultAllocator, as)
			emb := b.Field(3).(*array.FixedSizeListBuilder)
			for j := g * rows / 4; j < (g+1)*rows/4; j++ {
				b.Field(0).(*array.Int64Builder).Append(int64(i*rows + j))
				b.Field(1).(*array.StringBuilder).Append(part)
				b.Field(2).(*array.StringBuilder).Append([]string{"x", "y", "z"}[r.IntN(3)])
				emb.Append(true)
				for range dim {
					emb.ValueBuilder().(*array.Float32Builder).Append(float32(r.NormFloat64()))
				}
			}
			recs = append(recs, b.NewRecordBatch())
			b.Release()
		}
		datas = append(datas, harness.WriteParquetRecords(t, as, recs, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rows/4))))
		parts = append(parts, map[int]any{1000: part})
		for _, rec := range recs {
			rec.Release()
		}
	}
	tbl = harness.CommitDataFiles(t, c, tbl, datas, []int64{rows, rows, rows}, parts)
	paths, oracle := tableOracle(t, c, tbl)
	q := make([]float32, dim)
	for d := range q {
		q[d] = float32(r.NormFloat64())
	}
	const name, k = "vecp_it.parts", 10

	// part = 'b': file b whole, no predicate on the volume.
	resp, err := vectorPlan(t, c, name, q, k, `{"type":"eq","term":{"field-id":2},"value":"b"}`)
	if err != nil {
		t.Fatal(err)
	}
	onlyB := filteredCase{"part", "part = 'b'", func(o oracleFile, p int) bool { return o.strs["part"][p] == "b" }}
	want := bruteForceL2(oracle, q, k, func(f int, p int64) bool { return onlyB.match(oracle[f], int(p)) })
	st := resp.GetStats().GetVector()
	if len(st.GetFiles()) != 1 || st.GetFilesFiltered() != 0 || st.GetFiles()[0].GetFiltered() || st.GetFiles()[0].GetMaskRows() != -1 ||
		oracle[slices.Index(paths, st.GetFiles()[0].GetFile())].strs["part"][0] != "b" {
		t.Fatalf("part = 'b': searched %+v", st)
	}
	if len(resp.GetRowRefs()) != k {
		t.Fatalf("part = 'b': %d rows", len(resp.GetRowRefs()))
	}
	for i, ref := range resp.GetRowRefs() {
		if fi := slices.Index(paths, ref.GetRef().GetFile()); fi != want[i].file || ref.GetRef().GetFilePosition() != want[i].pos {
			t.Fatalf("part = 'b': row %d is %d of %s, the oracle's is %d of %s", i, ref.GetRef().GetFilePosition(), ref.GetRef().GetFile(), want[i].pos, paths[want[i].file])
		}
	}

	// part = 'b' AND cat = 'x', and part = 'a' OR cat = 'y': the volume
	// evaluates the predicate on the files the partition leaves.
	for _, fc := range []filteredCase{
		{"part and cat", `{"type":"and","left":{"type":"eq","term":{"field-id":2},"value":"b"},"right":{"type":"eq","term":{"field-id":3},"value":"x"}}`,
			func(o oracleFile, p int) bool { return o.strs["part"][p] == "b" && o.strs["cat"][p] == "x" }},
		{"part or cat", `{"type":"or","left":{"type":"eq","term":{"field-id":2},"value":"a"},"right":{"type":"eq","term":{"field-id":3},"value":"y"}}`,
			func(o oracleFile, p int) bool { return o.strs["part"][p] == "a" || o.strs["cat"][p] == "y" }},
	} {
		resp, err := vectorPlan(t, c, name, q, k, fc.pred)
		if err != nil {
			t.Fatalf("%s: %v", fc.name, err)
		}
		want := bruteForceL2(oracle, q, k, func(f int, p int64) bool { return fc.match(oracle[f], int(p)) })
		if r := checkFilteredPlan(t, fc.name, resp, oracle, paths, want, fc); r != 1 {
			t.Fatalf("%s: recall %.2f of an exact search", fc.name, r)
		}
	}
}

// A table partitioned by tenant, each tenant's vectors in two tight
// blobs far from the others' (the tenant-partitioned demo's shape), with
// an ivf index: the volume searches the files nearest the query first and
// skips the files and lists whose rows are all provably farther than the
// k nearest found — the plan's top-K is the brute-force one, row for row
// (up to ties), and the stats count what was skipped.
func TestVectorPlansSkipFilesAndListsFartherThanTheKNearestAndKeepTheBruteForceTopK(t *testing.T) {
	c := sharedCluster(t)
	tbl := createIdentityPartitioned(t, c, "vecb_it", "tenants", 2, "tenant",
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "embedding", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}},
	)
	const dim, rows, tenants = 16, 4000, 6
	fid := parquetFieldID
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("1")},
		{Name: "tenant", Type: arrow.BinaryTypes.String, Metadata: fid("2")},
		{Name: "embedding", Type: arrow.FixedSizeListOfField(dim, arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Metadata: fid("4")}), Nullable: true, Metadata: fid("3")},
	}, nil)
	r := rand.New(rand.NewPCG(17, 3))
	var datas [][]byte
	var parts []map[int]any
	var counts []int64
	for i := range tenants {
		tenant := fmt.Sprintf("t%d", i)
		centres := make([][]float32, 2)
		for b := range centres {
			centres[b] = make([]float32, dim)
			for d := range centres[b] {
				centres[b][d] = float32(3 * r.NormFloat64())
			}
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		emb := b.Field(2).(*array.FixedSizeListBuilder)
		for j := range rows {
			b.Field(0).(*array.Int64Builder).Append(int64(i*rows + j))
			b.Field(1).(*array.StringBuilder).Append(tenant)
			emb.Append(true)
			for d := range dim {
				emb.ValueBuilder().(*array.Float32Builder).Append(centres[j%2][d] + float32(0.1*r.NormFloat64()))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		datas = append(datas, harness.WriteParquetRecords(t, as, []arrow.RecordBatch{rec}, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000))))
		rec.Release()
		parts, counts = append(parts, map[int]any{1000: tenant}), append(counts, rows)
	}
	tbl = harness.CommitDataFiles(t, c, tbl, datas, counts, parts)
	paths, oracle := tableOracle(t, c, tbl)
	const name, k = "vecb_it.tenants", 10
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "embedding", "-kind", "ivf", "-wait"); err != nil {
		t.Fatalf("index create ivf: %v\n%s%s", err, out, errOut)
	}
	var listsPruned, filesPruned int64
	for qi := range 6 {
		f := oracle[qi%len(oracle)]
		var q []float32
		for p := qi; q == nil; p++ {
			if e := f.embs[p]; e != nil {
				q = slices.Clone(e)
			}
		}
		for d := range q {
			q[d] += float32(0.05 * r.NormFloat64())
		}
		for _, pred := range []string{"", `{"type":"in","term":{"field-id":2},"values":["t0","t1","t2","t3","t4","t5"]}`} {
			resp, err := vectorPlan(t, c, name, q, k, pred)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteForceL2(oracle, q, k, func(int, int64) bool { return true })
			if len(resp.GetRowRefs()) != k {
				t.Fatalf("query %d: %d rows, want %d", qi, len(resp.GetRowRefs()), k)
			}
			// Row for row, up to rows at equal distance (float32 against
			// the oracle's float64: the blobs are tight).
			seen := map[[2]int64]bool{}
			for i, ref := range resp.GetRowRefs() {
				fi := slices.Index(paths, ref.GetRef().GetFile())
				pos := ref.GetRef().GetFilePosition()
				if fi < 0 || seen[[2]int64{int64(fi), pos}] {
					t.Fatalf("query %d: row %d (%d of %s) is unknown or repeated", qi, i, pos, ref.GetRef().GetFile())
				}
				seen[[2]int64{int64(fi), pos}] = true
				var d float64
				for j, x := range oracle[fi].embs[pos] {
					d += (float64(x) - float64(q[j])) * (float64(x) - float64(q[j]))
				}
				if math.Abs(d-want[i].dist) > 1e-4*want[i].dist {
					t.Fatalf("query %d (predicate %q): row %d is %d of %s at %g, the brute force's is %d of %s at %g", qi, pred, i, pos, ref.GetRef().GetFile(), d, want[i].pos, paths[want[i].file], want[i].dist)
				}
			}
			st := resp.GetStats().GetVector()
			if st.GetFilesByIndex() != tenants {
				t.Fatalf("query %d: %d files by index, want %d: %+v", qi, st.GetFilesByIndex(), tenants, st)
			}
			listsPruned += st.GetListsPruned()
			filesPruned += int64(st.GetFilesPruned())
		}
	}
	t.Logf("12 plans over %d files: %d lists and %d files skipped", tenants, listsPruned, filesPruned)
	if listsPruned == 0 || filesPruned == 0 {
		t.Fatalf("no list or no file was skipped (%d lists, %d files) although every query sits in one tenant's blob", listsPruned, filesPruned)
	}
}

// createIdentityPartitioned creates table ns.name (and the namespace) of
// the fields, identity-partitioned on field source as partition field
// 1000 named part.
func createIdentityPartitioned(t *testing.T, c *harness.Cluster, ns, name string, source int, part string, fields ...iceberg.NestedField) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{ns}, nil)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{source}, FieldID: 1000, Name: part, Transform: iceberg.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, iceberg.NewSchema(0, fields...), catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// parquetFieldID is the Arrow field metadata carrying a Parquet field id.
func parquetFieldID(id string) arrow.Metadata {
	return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id})
}
