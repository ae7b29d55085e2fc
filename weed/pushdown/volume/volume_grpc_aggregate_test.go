package volume

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// Requests past AggregateRows' bounds are refused before anything is
// looked up, each with the error naming the bound.
func TestAggregateRowsRefusesRequestsPastItsBounds(t *testing.T) {
	ok := func() *pushdown_pb.AggregateRowsRequest {
		return &pushdown_pb.AggregateRowsRequest{Path: "s3://b/f.parquet", SizeBytes: 10, RecordCount: 10,
			RowGroups:  []*pushdown_pb.ScanRowGroup{{RowGroup: 0}},
			Aggregates: []*pushdown_pb.AggregateSpec{{Func: pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS}}}
	}
	if err := checkAggregateRequest(ok()); err != nil {
		t.Fatalf("a request inside the bounds: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*pushdown_pb.AggregateRowsRequest)
		kind perr.Kind
		says string
	}{
		{"no path", func(r *pushdown_pb.AggregateRowsRequest) { r.Path = "" }, perr.InvalidArgument, "path is empty"},
		{"no row groups", func(r *pushdown_pb.AggregateRowsRequest) { r.RowGroups = nil }, perr.InvalidArgument, "no row groups"},
		{"no aggregates", func(r *pushdown_pb.AggregateRowsRequest) { r.Aggregates = nil }, perr.InvalidArgument, "no aggregates"},
		{"an unknown function", func(r *pushdown_pb.AggregateRowsRequest) { r.Aggregates[0].Func = 99 }, perr.InvalidArgument, "has no function"},
		{"too many grouping columns", func(r *pushdown_pb.AggregateRowsRequest) { r.GroupFieldIds = make([]int32, MaxAggregateGroupBy+1) },
			perr.ResourceExhausted, "grouping columns exceed"},
		{"too many aggregates", func(r *pushdown_pb.AggregateRowsRequest) {
			r.Aggregates = make([]*pushdown_pb.AggregateSpec, MaxAggregates+1)
		}, perr.ResourceExhausted, "aggregates exceed"},
		{"row groups out of order", func(r *pushdown_pb.AggregateRowsRequest) {
			r.RowGroups = []*pushdown_pb.ScanRowGroup{{RowGroup: 2}, {RowGroup: 1}}
		}, perr.InvalidArgument, "ascending"},
		{"negative max_groups", func(r *pushdown_pb.AggregateRowsRequest) { r.MaxGroups = -1 }, perr.InvalidArgument, "negative"},
	} {
		req := ok()
		c.edit(req)
		err := checkAggregateRequest(req)
		if err == nil || perr.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (kind %v), want %v saying %q", c.name, err, perr.KindOf(err), c.kind, c.says)
		}
	}
}

// A row group's matching rows (not every row: taken by position) of a
// dictionary-encoded string key with NULLs and an int64 argument with
// NULLs fold into the same groups and states as counting them by hand.
func TestARowGroupsMatchingRowsFoldIntoPartialStatesByDictionaryCode(t *testing.T) {
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	type state struct{ rows, n, sum int64 }
	want := map[string]*state{} // key ("<NULL>" for NULL) → rows, non-NULL x, SUM(x) of the matching rows
	matched := roaring64.New()
	const first = 1000 // the row group's first file row
	for i := range 3000 {
		key := fmt.Sprintf("k%d", i%7)
		if i%11 == 0 {
			b.Field(0).AppendNull()
			key = "<NULL>"
		} else {
			b.Field(0).(*array.StringBuilder).Append(key)
		}
		x := int64(i*37%1000 - 500)
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(x)
		}
		if i%3 != 0 { // the rows the predicate kept
			matched.Add(uint64(first + i))
			if want[key] == nil {
				want[key] = &state{}
			}
			want[key].rows++
			if i%5 != 0 {
				want[key].n++
				want[key].sum += x
			}
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(sch, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, 3000, parquet.NewWriterProperties(parquet.WithDictionaryDefault(true)), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	props := pqarrow.ArrowReadProperties{BatchSize: 1 << 16}
	props.SetReadDict(0, true)
	fr, err := pqarrow.NewFileReader(pr, props, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	fileSchema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if fileSchema.Field(0).Type.ID() != arrow.DICTIONARY {
		t.Fatalf("the key reads as %s, want a dictionary", fileSchema.Field(0).Type)
	}
	// the key read by pqarrow (a footer without chunk facts) and straight
	// from its index runs (the footer as loaded: a wholly dictionary-encoded chunk)
	src := source{&countingReaderAt{r: bytes.NewReader(buf.Bytes())}}
	loaded, err := footer.Load(ctx, footer.Identity{Path: "f.parquet", Size: int64(buf.Len())}, src)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Chunks[0][0].DictionaryOnly {
		t.Fatal("the key's chunk is not wholly dictionary-encoded")
	}
	for _, ft := range []*footer.Footer{{Meta: pr.MetaData()}, loaded} {
		partials, err := sqlstmt.NewPartials(1, []sqlstmt.PartialAgg{{Func: sqlstmt.Count}, {Func: sqlstmt.Sum, HasArg: true}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := aggregateRowGroup(ctx, fr, src, ft, 0, first, 3000, []int{0, 1}, fileSchema, matched, partials); err != nil {
			t.Fatal(err)
		}
		states, err := partials.Record(fileSchema, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		defer states.Release()
		// through Arrow IPC, as the answer travels
		var out bytes.Buffer
		w := ipc.NewWriter(&out, ipc.WithSchema(states.Schema()))
		if err := w.Write(states); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		rd, err := ipc.NewReader(&out)
		if err != nil || !rd.Next() {
			t.Fatalf("read back: %v", err)
		}
		defer rd.Release()
		got := rd.RecordBatch()
		if int(got.NumRows()) != len(want) {
			t.Fatalf("%d groups, want %d", got.NumRows(), len(want))
		}
		col := func(name string) arrow.Array { return got.Column(got.Schema().FieldIndices(name)[0]) }
		keys, rows, n, sums := col("g0").(*array.String), col("n0").(*array.Int64), col("n1").(*array.Int64), col("s1").(*array.Int64)
		for i := range int(got.NumRows()) {
			key := "<NULL>"
			if keys.IsValid(i) {
				key = keys.Value(i)
			}
			w := want[key]
			if w == nil {
				t.Fatalf("group %q was not expected", key)
			}
			if rows.Value(i) != w.rows || n.Value(i) != w.n || sums.Value(i) != w.sum {
				t.Errorf("group %q: COUNT(*) %d, COUNT(x) %d, SUM(x) %d; want %d, %d, %d", key, rows.Value(i), n.Value(i), sums.Value(i), w.rows, w.n, w.sum)
			}
		}
	}
}

// Row groups every row of which qualifies answer COUNT, MIN and MAX of
// integer-backed columns (an all-NULL row group included) from their
// footer statistics with the states decoding them gives; floats (NaN is
// not in their statistics), SUM and GROUP BY are read.
func TestRowGroupStatisticsGiveTheStatesDecodingGives(t *testing.T) {
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 3000 {
		if i%7 == 0 || (i >= 1000 && i < 2000) { // the second row group: x all NULL
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(i*7919%5000 - 2500))
		}
		if i%9 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + int64(i*104729%3000)*1_000_000))
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 3)
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(sch, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, 1000, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	pr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := footer.Layout(pr.MetaData(), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	ft := &footer.Footer{Meta: pr.MetaData(), Chunks: chunks}
	spec := func(f pushdown_pb.AggregateFunc) *pushdown_pb.AggregateSpec {
		return &pushdown_pb.AggregateSpec{Func: f}
	}
	req := &pushdown_pb.AggregateRowsRequest{Aggregates: []*pushdown_pb.AggregateSpec{spec(pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS),
		spec(pushdown_pb.AggregateFunc_AGGREGATE_COUNT), spec(pushdown_pb.AggregateFunc_AGGREGATE_MIN), spec(pushdown_pb.AggregateFunc_AGGREGATE_MAX),
		spec(pushdown_pb.AggregateFunc_AGGREGATE_MIN), spec(pushdown_pb.AggregateFunc_AGGREGATE_MAX)}}
	aggs := []sqlstmt.PartialAgg{{Func: sqlstmt.Count}, {Func: sqlstmt.Count, HasArg: true}, {Func: sqlstmt.Min, HasArg: true},
		{Func: sqlstmt.Max, HasArg: true}, {Func: sqlstmt.Min, HasArg: true}, {Func: sqlstmt.Max, HasArg: true}}
	leaves := []int{0, 0, 0, 1, 1}
	fileSchema, _ := fr.Schema()
	readSchema := arrow.NewSchema([]arrow.Field{fileSchema.Field(0), fileSchema.Field(0), fileSchema.Field(0), fileSchema.Field(1), fileSchema.Field(1)}, nil)
	for rg := range 3 {
		first, n := int64(rg*1000), int64(1000)
		fromStats, _ := sqlstmt.NewPartials(0, aggs, 0)
		states := statisticsStates(ft, rg, n, req, leaves, readSchema)
		if states == nil {
			t.Fatalf("row group %d: no states from its statistics", rg)
		}
		if err := fromStats.Merge(readSchema, states); err != nil {
			t.Fatal(err)
		}
		states.Release()
		decoded, _ := sqlstmt.NewPartials(0, aggs, 0)
		all := roaring64.New()
		all.AddRange(uint64(first), uint64(first+n))
		if err := aggregateRowGroup(ctx, fr, nil, ft, rg, first, n, leaves, readSchema, all, decoded); err != nil {
			t.Fatal(err)
		}
		a, err := fromStats.Record(readSchema, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		d, err := decoded.Record(readSchema, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(a, d) {
			t.Errorf("row group %d: from statistics %v\ndecoded %v", rg, a, d)
		}
		a.Release()
		d.Release()
	}
	// read instead: a float's MIN, a SUM, a GROUP BY
	for name, r := range map[string]*pushdown_pb.AggregateRowsRequest{
		"MIN of a float": {Aggregates: []*pushdown_pb.AggregateSpec{spec(pushdown_pb.AggregateFunc_AGGREGATE_MIN)}},
		"SUM":            {Aggregates: []*pushdown_pb.AggregateSpec{spec(pushdown_pb.AggregateFunc_AGGREGATE_SUM)}},
		"GROUP BY":       {GroupFieldIds: []int32{1}, Aggregates: []*pushdown_pb.AggregateSpec{spec(pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS)}},
	} {
		ls, rs := []int{2}, arrow.NewSchema([]arrow.Field{fileSchema.Field(2)}, nil)
		if name == "SUM" {
			ls, rs = []int{0}, arrow.NewSchema([]arrow.Field{fileSchema.Field(0)}, nil)
		}
		if states := statisticsStates(ft, 0, 1000, r, ls, rs); states != nil {
			states.Release()
			t.Errorf("%s was answered from statistics", name)
		}
	}
}
