// Package deletebench measures what Iceberg deletes cost pushdown, in a real
// cluster: four copies of one table (1M rows, 8 files) — without deletes,
// and with 10% of the rows deleted by v3 deletion vectors, by v2
// position-delete files and by v2 equality deletes. It reports the delete
// cost per data file cold (computed from the delete files), persisted
// (loaded from the .index/ payload beside the data) and warm (memory),
// the bitmap cache hit rate of repeated plans, and plan latency with
// deletes against without. Run with `make bench` (LAKEWEED_BENCH=1,
// BENCH=deletes); results land in bench/results/deletes.{json,md}.
package deletebench

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/seaweedfs/seaweedfs/weed/pb"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
)

const (
	files       = 8
	rowsPerFile = 125_000
)

func benchSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "bucket", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
}

// bucketOf is a row's random bucket 0..9; bucket 0 is deleted (10%).
func bucketOf(id int64) int32 {
	r := rand.New(rand.NewPCG(uint64(id), 99))
	return int32(r.IntN(10))
}

func fileRows(t *testing.T, f int) arrow.Table {
	asch, err := table.SchemaToArrowSchema(benchSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	defer b.Release()
	for i := int64(0); i < rowsPerFile; i++ {
		id := int64(f)*rowsPerFile + i
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(bucketOf(id))
		b.Field(2).(*array.Int64Builder).Append(id * 7)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("name-%08d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asch, []arrow.RecordBatch{rec})
}

// writeTable creates ns.name with files appended one per commit, then
// deletes bucket 0 the given way ("" none, "dv", "position", "equality").
func writeTable(t *testing.T, c *harness.Cluster, name, kind string) *table.Table {
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"delbench"}, nil)
	version := "2"
	if kind == "dv" {
		version = "3"
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"delbench", name}, benchSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": version, table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
		"write.parquet.row-group-limit": "25000", "write.parquet.page-row-limit": "5000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	for f := 0; f < files; f++ {
		at := fileRows(t, f)
		if tbl, err = tbl.AppendTable(ctx, at, 1<<20, nil); err != nil {
			t.Fatal(err)
		}
		at.Release()
	}
	switch kind {
	case "dv", "position":
		tx := tbl.NewTransaction()
		if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("bucket"), int32(0)), nil); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	case "equality":
		asch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
		for id := int64(0); id < files*rowsPerFile; id++ {
			if bucketOf(id) == 0 {
				b.Field(0).(*array.Int64Builder).Append(id)
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		tx := tbl.NewTransaction()
		var recs iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
		fs, err := tx.WriteEqualityDeletes(ctx, []int{1}, recs)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.NewRowDelta(nil).AddDeletes(fs...).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

type result struct {
	Table              string  `json:"table"`
	Deletes            string  `json:"deletes"`
	DeleteFiles        int     `json:"delete_files"`
	RowsDeleted        int64   `json:"rows_deleted"`
	ColdMsPerFile      float64 `json:"cold_ms_per_file,omitempty"`
	PersistedMsPerFile float64 `json:"persisted_ms_per_file,omitempty"`
	WarmMsPerFile      float64 `json:"warm_ms_per_file,omitempty"`
	CacheHitRate       float64 `json:"warm_plan_bitmap_cache_hit_rate"`
	PlanP50Ms          float64 `json:"plan_p50_ms"`
	PlanP99Ms          float64 `json:"plan_p99_ms"`
	SelectivePlanP50Ms float64 `json:"selective_plan_p50_ms"`
	SelectivePlanP99Ms float64 `json:"selective_plan_p99_ms"`
}

func percentile(d []time.Duration, p float64) float64 {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000
}

// memStore is an empty in-memory Store: nothing persisted, so every bitmap
// is computed from the delete files (cold).
type memStore map[string][]byte

func (m memStore) Load(_ context.Context, k deletes.StoreKey) ([]byte, error) {
	return m[k.Data.Path+"/"+k.Name], nil
}
func (m memStore) Save(_ context.Context, k deletes.StoreKey, b []byte) error {
	m[k.Data.Path+"/"+k.Name] = b
	return nil
}

// deleteCost times Computer.Deleted per data file: cold (no store), warm
// (same Computer again) and persisted (a new Computer reading the payloads
// the cluster's volume service wrote beside the data).
func deleteCost(t *testing.T, c *harness.Cluster, tbl *table.Table) (cold, persisted, warm float64, nDeletes int) {
	ctx := context.Background()
	descs, err := descriptor.ForSnapshot(ctx, tbl, tbl.CurrentSnapshot().SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	reader := fileread.New([]pb.ServerAddress{pb.ServerAddress(c.FilerGrpcAddress())}, grpcutil.ClientDialOption(), "")
	open := indexstore.Opener(reader)
	type task struct {
		d    deletes.DataFile
		dels []deletes.File
	}
	var tasks []task
	seen := map[string]bool{}
	for i, d := range descs {
		f, dels, err := descriptor.ToDataFile(fmt.Sprint(i), d, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range dels {
			seen[x.Identity()] = true
		}
		tasks = append(tasks, task{deletes.DataFile{Path: f.Path, Size: f.Size, RecordCount: f.RecordCount, DataSeq: f.DataSeq}, dels})
	}
	run := func(comp *deletes.Computer) float64 {
		t0 := time.Now()
		for _, tk := range tasks {
			if _, err := comp.Deleted(ctx, tk.d, tk.dels, tbl.Schema(), tbl.Metadata().NameMapping()); err != nil {
				t.Fatal(err)
			}
		}
		return float64(time.Since(t0).Microseconds()) / 1000 / float64(len(tasks))
	}
	coldC := deletes.NewComputer(open, memStore{}, deletes.Options{CacheBytes: 256 << 20})
	cold = run(coldC)
	warm = run(coldC)
	persisted = run(deletes.NewComputer(open, indexstore.Filer{Reader: reader}, deletes.Options{CacheBytes: 256 << 20}))
	return cold, persisted, warm, len(seen)
}

func TestDeleteBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `make bench` (LAKEWEED_BENCH=1)")
	}
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	var results []result
	for _, kind := range []string{"", "dv", "position", "equality"} {
		name := "none"
		if kind != "" {
			name = kind
		}
		t0 := time.Now()
		tbl := writeTable(t, c, name, kind)
		t.Logf("wrote delbench.%s in %s", name, time.Since(t0).Round(time.Second))
		r := result{Table: "delbench." + name, Deletes: map[string]string{"": "none", "dv": "deletion vectors (v3)", "position": "position-delete files (v2)", "equality": "equality deletes (v2)"}[kind]}
		plan := func(where string, n int) ([]time.Duration, int64, int64, *pushdown_pb.ParquetPushdownResponse) {
			req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), r.Table, 0, where, "id,val,name")
			if err != nil {
				t.Fatal(err)
			}
			var ds []time.Duration
			var hits, misses int64
			var last *pushdown_pb.ParquetPushdownResponse
			for i := 0; i < n; i++ {
				t0 := time.Now()
				resp, err := c.Catalog(t).Plan(ctx, req)
				if err != nil {
					t.Fatalf("plan %s: %v", r.Table, err)
				}
				ds = append(ds, time.Since(t0))
				hits += resp.GetStats().GetDeleteBitmapCacheHits()
				misses += resp.GetStats().GetDeleteBitmapCacheMisses()
				last = resp
			}
			return ds, hits, misses, last
		}
		plan("", 1) // the volume service computes and persists the bitmaps
		ds, hits, misses, last := plan("", 30)
		r.PlanP50Ms, r.PlanP99Ms = percentile(ds, 0.5), percentile(ds, 0.99)
		r.RowsDeleted = last.GetStats().GetRowsDeleted()
		if hits+misses > 0 {
			r.CacheHitRate = float64(hits) / float64(hits+misses)
		}
		ds, _, _, _ = plan("id >= 400000 AND id < 410000", 30)
		r.SelectivePlanP50Ms, r.SelectivePlanP99Ms = percentile(ds, 0.5), percentile(ds, 0.99)
		if kind != "" {
			r.ColdMsPerFile, r.PersistedMsPerFile, r.WarmMsPerFile, r.DeleteFiles = deleteCost(t, c, tbl)
		}
		t.Logf("%+v", r)
		results = append(results, r)
	}
	writeResults(t, results)
}

func writeResults(t *testing.T, rs []result) {
	dir := filepath.Join("..", "results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rs, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "deletes.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	md.WriteString(fmt.Sprintf("1,000,000 rows in %d files; 10%% of the rows deleted (bucket = 0). Delete cost per data file: cold = computed from the delete files, persisted = loaded from `.index/` beside the data, warm = in memory. Plan latency through the cluster's catalog, warm, 30 runs.\n\n", files))
	md.WriteString("| deletes | delete files | rows deleted | cold ms/file | persisted ms/file | warm ms/file | bitmap cache hit rate | plan p50 ms | plan p99 ms | selective plan p50 ms | selective plan p99 ms |\n")
	md.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		fmt.Fprintf(&md, "| %s | %d | %d | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.Deletes, r.DeleteFiles, r.RowsDeleted,
			r.ColdMsPerFile, r.PersistedMsPerFile, r.WarmMsPerFile, r.CacheHitRate, r.PlanP50Ms, r.PlanP99Ms, r.SelectivePlanP50Ms, r.SelectivePlanP99Ms)
	}
	if err := os.WriteFile(filepath.Join(dir, "deletes.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("results in %s\n%s", dir, md.String())
}
