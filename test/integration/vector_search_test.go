package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// oracleFile is a data file read independently with arrow-go: per file
// position its id and embedding.
type oracleFile struct {
	path string
	size int64
	ids  []int64
	embs [][]float32
	strs map[string][]string // string columns by name
}

func readOracleFile(t *testing.T, c *harness.Cluster, path string) oracleFile {
	t.Helper()
	tbl, size := readParquetObject(t, c, path)
	defer tbl.Release()
	return oracleOf(t, path, size, tbl)
}

// readParquetObject reads a whole data file through the S3 gateway with
// arrow-go.
func readParquetObject(t *testing.T, c *harness.Cluster, path string) (arrow.Table, int64) {
	t.Helper()
	key := strings.TrimPrefix(path, "s3://"+c.Warehouse+"/")
	obj, err := c.S3(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	data, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl, int64(len(data))
}

// oracleOf takes the ids and embeddings of a file's table.
func oracleOf(t *testing.T, path string, size int64, tbl arrow.Table) oracleFile {
	t.Helper()
	o := oracleFile{path: path, size: size, strs: map[string][]string{}}
	for i := range int(tbl.NumCols()) {
		name := tbl.Schema().Field(i).Name
		for _, ch := range tbl.Column(i).Data().Chunks() {
			switch name {
			case "id":
				o.ids = append(o.ids, ch.(*array.Int64).Int64Values()...)
			case "embedding":
				l := ch.(array.ListLike)
				vals := l.ListValues().(*array.Float32)
				for r := range l.Len() {
					s, e := l.ValueOffsets(r)
					if l.IsNull(r) {
						o.embs = append(o.embs, nil)
						continue
					}
					o.embs = append(o.embs, slices.Clone(vals.Float32Values()[int(s):int(e)]))
				}
			default:
				if sa, ok := ch.(*array.String); ok {
					for r := range sa.Len() {
						o.strs[name] = append(o.strs[name], sa.Value(r))
					}
				}
			}
		}
	}
	if len(o.ids) != len(o.embs) || len(o.ids) == 0 {
		t.Fatalf("%s: %d ids, %d embeddings", path, len(o.ids), len(o.embs))
	}
	return o
}

type oracleHit struct {
	file int
	pos  int64
	dist float64
}

// bruteForceL2 is the exact top-k by squared L2 in float64 over the rows
// keep admits.
func bruteForceL2(files []oracleFile, q []float32, k int, keep func(file int, pos int64) bool) []oracleHit {
	var all []oracleHit
	for fi, f := range files {
		for p, e := range f.embs {
			if e == nil || !keep(fi, int64(p)) {
				continue
			}
			var d float64
			for j := range e {
				x := float64(e[j]) - float64(q[j])
				d += x * x
			}
			all = append(all, oracleHit{fi, int64(p), d})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].dist < all[j].dist })
	return all[:min(k, len(all))]
}

// Vectors are searched next to the data: an ivf index built through `weed
// pushdown index create` on the demo table's fixed_size_list<float>
// embedding serves SearchVectors on the volume pushdown service, whose
// top-K matches a brute-force oracle over the files (exactly without the
// index, with recall ≥ 0.9 through it), comes back with the projected id
// of exactly those rows, never leaves the candidate mask, refuses a query
// of the wrong dimension, and falls back to an exact scan that says so
// when the index payload disappears.
func TestSearchVectorsBesideTheDataMatchesABruteForceOracle(t *testing.T) {
	c := sharedCluster(t)
	e := c.Endpoints()
	const name = "vec_it.events"
	if out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", name, "-rows", "24000", "-files", "2",
		"-rowGroupRows", "4000", "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse); err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	t0 := time.Now()
	if out, errOut, err := harness.Weed(t, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(),
		"-table", name, "-column", "embedding", "-kind", "ivf", "-wait"); err != nil {
		t.Fatalf("index create ivf: %v\n%s%s", err, out, errOut)
	}
	t.Logf("ivf build of 2 files × 12,000 × 64-d through the catalog: %v", time.Since(t0).Round(time.Millisecond))
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"vec_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	schemaJSON, _ := json.Marshal(tbl.Schema())
	field, _ := tbl.Schema().FindFieldByName("embedding")
	idField, _ := tbl.Schema().FindFieldByName("id")
	list, err := c.Catalog(t).ListIndexes(ctx, &pushdown_pb.ListIndexesRequest{Table: name})
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]*pushdown_pb.IndexEntry{}
	for _, en := range list.GetEntries() {
		if en.GetKind() == "ivf" && en.GetState() == "committed" {
			entries[en.GetDataFile()] = en
		}
	}
	paths := filesOf(t, tbl)
	if len(paths) != 2 || len(entries) != 2 {
		t.Fatalf("%d files, %d committed ivf entries: %+v", len(paths), len(entries), list.GetEntries())
	}
	sort.Strings(paths)
	var oracle []oracleFile
	for _, p := range paths {
		oracle = append(oracle, readOracleFile(t, c, p))
	}
	request := func(indexed bool, q []float32, k int32, masks []*roaring64.Bitmap) *pushdown_pb.SearchVectorsRequest {
		req := &pushdown_pb.SearchVectorsRequest{SchemaJson: schemaJSON, FieldId: int32(field.ID), Vector: q, Metric: pushdown_pb.VectorMetric_METRIC_L2,
			TopK: k, ProjectedFieldIds: []int32{int32(idField.ID)}}
		for i, o := range oracle {
			f := &pushdown_pb.VectorSearchFile{Path: o.path, SizeBytes: o.size, RecordCount: int64(len(o.ids))}
			if indexed {
				en := entries[o.path]
				f.IndexKind, f.IndexIdentity = "ivf", en.GetIdentity()
				f.IndexPayloadBytes, f.IndexPayloadSha256 = en.GetPayloadBytes(), en.GetPayloadSha256()
			}
			if masks != nil {
				var buf bytes.Buffer
				if _, err := masks[i].WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				f.HasCandidates, f.Candidates = true, buf.Bytes()
			}
			req.Files = append(req.Files, f)
		}
		return req
	}
	// check compares a response with the oracle's hits: the same rows
	// (exact) or recall (approximate), scores within float32 rounding, and
	// the projected ids of exactly the returned rows.
	check := func(what string, resp *pushdown_pb.SearchVectorsResponse, want []oracleHit, exact bool) float64 {
		t.Helper()
		got := map[[2]int64]float32{}
		projected := map[string][]int64{}
		for _, f := range resp.GetFiles() {
			if len(f.GetColumnsIpc()) == 0 {
				continue
			}
			r, err := ipc.NewReader(bytes.NewReader(f.GetColumnsIpc()))
			if err != nil {
				t.Fatalf("%s: columns of %s: %v", what, f.GetPath(), err)
			}
			for r.Next() {
				col := r.RecordBatch().Column(int(r.Schema().FieldIndices("id")[0])).(*array.Int64)
				projected[f.GetPath()] = append(projected[f.GetPath()], col.Int64Values()...)
			}
			r.Release()
		}
		seen := map[string]int{}
		for i, ref := range resp.GetRowRefs() {
			fi := slices.Index(paths, ref.GetRef().GetFile())
			pos := ref.GetRef().GetFilePosition()
			if fi < 0 || !ref.GetHasScore() || (i > 0 && ref.GetScore() < resp.GetRowRefs()[i-1].GetScore()) {
				t.Fatalf("%s: row ref %d %+v is not a scored ref of a searched file in distance order", what, i, ref)
			}
			ids := projected[ref.GetRef().GetFile()]
			if n := seen[ref.GetRef().GetFile()]; n >= len(ids) || ids[n] != oracle[fi].ids[pos] {
				t.Fatalf("%s: the projected id of row %d of %s is not the row's id %d (projected %v)", what, pos, paths[fi], oracle[fi].ids[pos], ids)
			}
			seen[ref.GetRef().GetFile()]++
			got[[2]int64{int64(fi), pos}] = ref.GetScore()
		}
		if len(resp.GetRowRefs()) != len(want) {
			t.Fatalf("%s: %d rows, the oracle has %d", what, len(resp.GetRowRefs()), len(want))
		}
		hits := 0
		for _, w := range want {
			s, ok := got[[2]int64{int64(w.file), w.pos}]
			if !ok {
				if exact {
					t.Fatalf("%s: the oracle's row %d of %s (distance %.4f) is missing", what, w.pos, paths[w.file], w.dist)
				}
				continue
			}
			hits++
			if math.Abs(float64(s)-w.dist) > 1e-3*math.Max(1, w.dist) {
				t.Fatalf("%s: row %d scored %v, the oracle says %v", what, w.pos, s, w.dist)
			}
		}
		return float64(hits) / float64(len(want))
	}
	v := c.Volume(t)
	all := func(int, int64) bool { return true }
	queries := [][]float32{oracle[0].embs[17], oracle[1].embs[4321], oracle[0].embs[9999]}
	var recallSum float64
	for qi, q := range queries {
		q = slices.Clone(q)
		q[0] += 0.05
		want := bruteForceL2(oracle, q, 10, all)
		exact, err := v.SearchVectors(ctx, request(false, q, 10, nil))
		if err != nil {
			t.Fatalf("exact SearchVectors: %v", err)
		}
		check("exact", exact, want, true)
		for _, f := range exact.GetFiles() {
			if f.GetSearchedBy() != "exact" || f.GetVectorsScored() != int64(len(oracle[0].ids)) {
				t.Fatalf("an exact search of %s: %+v", f.GetPath(), f)
			}
		}
		t1 := time.Now()
		ivf, err := v.SearchVectors(ctx, request(true, q, 10, nil))
		if err != nil {
			t.Fatalf("ivf SearchVectors: %v", err)
		}
		lat := time.Since(t1)
		recallSum += check("ivf", ivf, want, false)
		for _, f := range ivf.GetFiles() {
			if f.GetSearchedBy() != "ivf" || f.GetListsProbed() == 0 || f.GetVectorsScored() >= int64(len(oracle[0].ids))/2 || (qi > 0 && !f.GetCacheHit()) {
				t.Fatalf("an ivf search of %s: %+v", f.GetPath(), f)
			}
		}
		t.Logf("query %d: ivf %v (%d+%d vectors scored), exact files scored %d each", qi, lat.Round(time.Microsecond),
			ivf.GetFiles()[0].GetVectorsScored(), ivf.GetFiles()[1].GetVectorsScored(), len(oracle[0].ids))
	}
	if r := recallSum / float64(len(queries)); r < 0.9 {
		t.Fatalf("ivf recall@10 %.2f against the oracle, want ≥ 0.9", r)
	}

	// A mask of the rows whose id is divisible by 7: every row returned
	// passes it, and there are exactly k of them.
	masks := make([]*roaring64.Bitmap, len(oracle))
	for i, o := range oracle {
		masks[i] = roaring64.New()
		for p, id := range o.ids {
			if id%7 == 0 {
				masks[i].Add(uint64(p))
			}
		}
	}
	q := slices.Clone(oracle[1].embs[100])
	want := bruteForceL2(oracle, q, 10, func(f int, p int64) bool { return oracle[f].ids[p]%7 == 0 })
	for _, indexed := range []bool{false, true} {
		resp, err := v.SearchVectors(ctx, request(indexed, q, 10, masks))
		if err != nil {
			t.Fatal(err)
		}
		check("masked", resp, want, !indexed)
		for _, ref := range resp.GetRowRefs() {
			fi := slices.Index(paths, ref.GetRef().GetFile())
			if oracle[fi].ids[ref.GetRef().GetFilePosition()]%7 != 0 {
				t.Fatalf("a masked search returned row %d (id %d) outside the mask", ref.GetRef().GetFilePosition(), oracle[fi].ids[ref.GetRef().GetFilePosition()])
			}
		}
	}

	// A query of another dimension is a loud error naming the problem.
	_, err = v.SearchVectors(ctx, request(true, make([]float32, 63), 10, nil))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "dimension") {
		t.Fatalf("a 63-d query of a 64-d column: %v", err)
	}

	// Plan with vector_query: the catalog dispatches SearchVectors to the
	// volume holding each file and merges the global top-K into row_refs.
	planVec := func(q []float32, pred string) (*pushdown_pb.ParquetPushdownResponse, error) {
		req := &pushdown_pb.ParquetPushdownRequest{Table: name, VectorQuery: &pushdown_pb.VectorQuery{
			Column: &pushdown_pb.ColumnRef{Path: "embedding"}, Vector: q, Metric: pushdown_pb.VectorMetric_METRIC_L2, TopK: 10}}
		if pred != "" {
			req.PredicateKind, req.Predicate = pushdown_pb.PredicateKind_PREDICATE_ICEBERG, []byte(pred)
		}
		return c.Catalog(t).Plan(ctx, req)
	}
	planRecall := func(what string, resp *pushdown_pb.ParquetPushdownResponse, want []oracleHit) float64 {
		t.Helper()
		if len(resp.GetRowRefs()) != len(want) {
			t.Fatalf("%s: %d row refs, want %d", what, len(resp.GetRowRefs()), len(want))
		}
		in := map[[2]int64]bool{}
		for _, w := range want {
			in[[2]int64{int64(w.file), w.pos}] = true
		}
		n := 0
		for i, r := range resp.GetRowRefs() {
			if !r.GetHasScore() || (i > 0 && r.GetScore() < resp.GetRowRefs()[i-1].GetScore()) {
				t.Fatalf("%s: row ref %d is unscored or out of distance order", what, i)
			}
			if in[[2]int64{int64(slices.Index(paths, r.GetRef().GetFile())), r.GetRef().GetFilePosition()}] {
				n++
			}
		}
		return float64(n) / float64(len(want))
	}
	t1 := time.Now()
	pv, err := planVec(queries[1], "")
	if err != nil {
		t.Fatalf("Plan with vector_query: %v", err)
	}
	st := pv.GetStats().GetVector()
	if r := planRecall("plan", pv, bruteForceL2(oracle, queries[1], 10, all)); r < 0.9 || st.GetFilesByIndex() != 2 || len(st.GetFiles()) != 2 ||
		st.GetFiles()[0].GetEndpoint() == "" || st.GetVectorsScored() >= int64(len(oracle[0].ids)) {
		t.Fatalf("plan: recall %.2f, vector stats %+v", r, st)
	}
	t.Logf("Plan with vector_query: %v, %d vectors scored, %d files by index", time.Since(t1).Round(time.Microsecond), st.GetVectorsScored(), st.GetFilesByIndex())
	if _, err := planVec(queries[1], `{"type":"and","left":{"type":"lt","term":{"field-id":1},"value":5000},"right":{"type":"mystery"}}`); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "exactly") {
		t.Fatalf("a vector plan with a predicate part no tier evaluates: %v", err)
	}

	// The payload of the first file disappears: that file is searched
	// exactly and says why; the answer is still the oracle's.
	key := strings.TrimPrefix(entries[paths[0]].GetPayloadPath(), "s3://")
	del, _ := http.NewRequest(http.MethodDelete, "http://"+c.FilerAddr()+"/buckets/"+key, nil)
	if resp, err := http.DefaultClient.Do(del); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := v.SearchVectors(ctx, request(true, queries[0], 10, nil))
		if err != nil {
			t.Fatal(err)
		}
		f0 := resp.GetFiles()[0]
		if f0.GetSearchedBy() == "exact" && f0.GetIndexState() == "missing" {
			check("after the payload was lost", resp, bruteForceL2(oracle, queries[0], 10, all), false)
			if resp.GetFiles()[1].GetSearchedBy() != "ivf" {
				t.Fatalf("the other file was searched by %q", resp.GetFiles()[1].GetSearchedBy())
			}
			pv, err := planVec(queries[0], "")
			if err != nil {
				t.Fatal(err)
			}
			missing := strings.Join(pv.GetStats().GetIndexesMissing(), ";")
			if r := planRecall("plan without one payload", pv, bruteForceL2(oracle, queries[0], 10, all)); r < 0.9 ||
				pv.GetStats().GetVector().GetFilesExact() != 1 || !strings.Contains(missing, "missing") {
				t.Fatalf("plan after the payload was lost: recall %.2f, stats %+v, missing %q", r, pv.GetStats().GetVector(), missing)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the payload was deleted the file was searched by %q (state %q)", f0.GetSearchedBy(), f0.GetIndexState())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SearchVectors is authorized like every volume RPC: on a cluster with
// identities an unsigned caller is refused before any work, and so is a
// signed one naming a file outside the table buckets.
func TestSearchVectorsRefusesOutsidersBeforeAnyWork(t *testing.T) {
	c := startIdentityCluster(t)
	open := appendRows(t, createDeleteTable(t, c, "vacl_it", "open", 2), 0, 300)
	file := filesOf(t, open)[0]
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	ctx := context.Background()
	req := &pushdown_pb.SearchVectorsRequest{Files: []*pushdown_pb.VectorSearchFile{{Path: file, SizeBytes: 1, RecordCount: 1}},
		FieldId: 1, Vector: []float32{1, 2}, TopK: 3}
	_, err := c.Volume(t).SearchVectors(ctx, req)
	wantDenied(t, "an unsigned SearchVectors", err, "signature was not accepted")
	req.Files[0].Path = "/etc/iam/identities/probe.json"
	sctx, err := alice.SignCall(ctx, c.VolumePushdownAddr(), "SearchVectors", req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Volume(t).SearchVectors(sctx, req)
	wantDenied(t, "SearchVectors of a file outside the buckets", err, "is not an object in a bucket")
}
