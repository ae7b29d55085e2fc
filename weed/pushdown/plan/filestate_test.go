package plan

import (
	"context"
	"github.com/lakeweed/seaweedfs/test/harness"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// int32File is a one-column (field id 1) file of rows first, first+1, ...
// with a page index: files of equal row counts have equal sizes.
func int32File(t *testing.T, first int32, rows int) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32, Metadata: fieldMeta(1)}}, nil)
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < rows; i++ {
		b.Append(first + int32(i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(as, []arrow.Array{col}, int64(rows))
	defer rec.Release()
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithPageIndexEnabled(true),
		parquet.WithDataPageSize(64), parquet.WithBatchSize(10)))
}

// The per-file state (decoded statistics, column map, memoized outputs)
// hangs off the cached footer: a file rewritten in place with the same
// size, once the freshness tracker says so, is planned from its new
// statistics, never from the old file's state.
func TestAFileRewrittenInPlaceIsNotPlannedFromTheOldFilesState(t *testing.T) {
	v1, v2 := int32File(t, 0, 100), int32File(t, 1000, 100)
	if len(v1) != len(v2) {
		t.Fatalf("the two versions differ in size (%d, %d): the test needs an in-place rewrite", len(v1), len(v2))
	}
	path := "s3://w/a.parquet"
	mem := memFiles{path: v1}
	pl := &Planner{Cache: footer.NewCache("state", 64<<20, mem.open)}
	pl.Cache.Tracker = freshness.New(16)
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int32})
	x1050 := bindOrFail(t, schema, &predicate.Leaf{FieldID: 1, Op: predicate.OpEq, Raw: []iceberg.Literal{iceberg.Int32Literal(1050)}})
	req := Request{Table: Table{Schema: schema}, Files: []DataFile{{Path: path, Size: int64(len(v1)), RecordCount: 100}},
		Predicate: x1050, Projection: []int{1}, Options: DefaultOptions()}
	for i := 0; i < 2; i++ { // the second plan is served from the state
		resp, _, err := pl.Plan(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.RowGroups) != 0 {
			t.Fatalf("plan %d of version 1 (rows 0..99) kept a row group for x = 1050", i)
		}
	}
	time.Sleep(time.Millisecond)
	mem[path] = v2
	pl.Cache.Tracker.Changed("/buckets/w/a.parquet")
	resp, plans, err := pl.Plan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.RowGroups) != 1 || resp.RowGroups[0].RowCount != 100 {
		t.Fatalf("version 2 (rows 1000..1099) holds x = 1050, but the plan keeps %d row groups", len(resp.RowGroups))
	}
	// the page index narrows to the page holding 1050
	if rows := plans[0].rowGroups[0].Rows; rows == nil || !rows.Overlaps(50, 51) || rows.Covers(100) {
		t.Fatalf("version 2's page index planned rows %v, want a strict subset holding row 50", rows)
	}
}
