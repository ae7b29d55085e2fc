package connector

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// The cost model sends a row group to the volume only when the Arrow
// bytes of the rows expected to match are at most half its planned pages
// (an eighth when the volume runs on this host) and the pages are over
// the floor (64 KiB; 1 MiB on this host); a LIMIT caps the rows expected.
func TestTheCostModelAsksTheVolumeOnlyWhenItsRowsAreFewerBytesThanThePages(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     filterSiteInput
		volume bool
	}{
		// wide rows (640 B of pages a candidate) behind a link: the link is the bottleneck
		{"selective, remote", filterSiteInput{PlannedBytes: 64 << 20, Candidates: 100000, RowBytes: 40, Selectivity: 0.01}, true},
		{"dense, remote", filterSiteInput{PlannedBytes: 64 << 20, Candidates: 100000, RowBytes: 400, Selectivity: 0.9}, false},
		{"just at half the pages", filterSiteInput{PlannedBytes: 40000000, Candidates: 100000, RowBytes: 400, Selectivity: 0.5}, true},
		{"just over half the pages", filterSiteInput{PlannedBytes: 39999999, Candidates: 100000, RowBytes: 400, Selectivity: 0.5}, false},
		{"small pages", filterSiteInput{PlannedBytes: 64 << 10, Candidates: 1000, RowBytes: 40, Selectivity: 0.001}, false},
		// narrow rows (16 B of pages a candidate): filtering beside the data costs more than the link saves
		{"selective but narrow, remote", filterSiteInput{PlannedBytes: 3 << 19, Candidates: 100000, RowBytes: 40, Selectivity: 0.01}, false},
		// on one host the volume's filter is never the faster site
		{"selective, on this host", filterSiteInput{PlannedBytes: 64 << 20, Candidates: 100000, RowBytes: 40, Selectivity: 0.01, Local: true}, false},
		{"under a MiB on this host", filterSiteInput{PlannedBytes: 1 << 20, Candidates: 100000, RowBytes: 40, Selectivity: 0.0001, Local: true}, false},
		{"dense but a LIMIT", filterSiteInput{PlannedBytes: 64 << 20, Candidates: 100000, RowBytes: 40, Selectivity: 0.9, Limit: 10}, true},
	} {
		got, reason := chooseFilterSite(c.in)
		if got != c.volume || !strings.HasPrefix(reason, map[bool]string{true: "volume: ", false: "here: "}[c.volume]) {
			t.Errorf("%s: volume %v (%s), want %v", c.name, got, reason, c.volume)
		}
	}
	if s, err := ParseFilterSite("volume"); err != nil || s != FilterVolume {
		t.Fatalf("ParseFilterSite(volume) = %v, %v", s, err)
	}
	if _, err := ParseFilterSite("local"); err == nil || !strings.Contains(err.Error(), "want auto, here or volume") {
		t.Fatalf("ParseFilterSite(local): %v, want an error naming the choices", err)
	}
}

// The selectivity estimate starts at the prior and follows what the query
// observes.
func TestTheSelectivityEstimateFollowsTheRowsObserved(t *testing.T) {
	var s scanCounters
	if got := s.selectivity(); got != scanPriorSelectivity {
		t.Fatalf("no observation: %v, want the prior %v", got, scanPriorSelectivity)
	}
	s.evaluated.Add(1_000_000)
	s.matched.Add(500_000)
	if got := s.selectivity(); got < 0.49 || got > 0.5 {
		t.Fatalf("half of a million rows matched: estimate %v, want about 0.5", got)
	}
}

// scanVolume answers ScanRows with fixed batches, or an error.
type scanVolume struct {
	pushdown_pb.UnimplementedPushdownVolumeServer
	batches []*pushdown_pb.ScanRowsResponse
	err     error
	calls   int
}

func (v *scanVolume) ScanRows(req *pushdown_pb.ScanRowsRequest, stream grpc.ServerStreamingServer[pushdown_pb.ScanRowsResponse]) error {
	v.calls++
	for _, b := range v.batches {
		if err := stream.Send(b); err != nil {
			return err
		}
	}
	return v.err
}

func bitmapBytes(t *testing.T, rows ...uint64) []byte {
	t.Helper()
	b, err := roaring64.BitmapOf(rows...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Any failure of the volume's scan — an error, rows out of order, past
// the row group, not planned or deleted, a count that disagrees, Arrow
// IPC that does not decode, a stream that ends before the row group —
// reads the row group here instead (ok false, no error), counted with its
// reason; nothing the volume sent is returned.
func TestAFailedOrWrongVolumeScanIsReadHereAndCounted(t *testing.T) {
	_, data := lateFile(t, false)
	one, two := 1, 2
	fl, err := newFileLayout("mem", int64(len(data)), layoutOf(t, "mem", data).md, iceberg.NameMapping{{FieldID: &one, Names: []string{"id"}}, {FieldID: &two, Names: []string{"msg"}}})
	if err != nil {
		t.Fatal(err)
	}
	fl.chunks = layoutOf(t, "mem", data).chunks
	n := fl.md.RowGroup(0).NumRows()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}, iceberg.NestedField{ID: 2, Name: "msg", Type: iceberg.PrimitiveTypes.String})
	p := &prepared{schema: sc, selectIDs: []int{1, 2}, parents: map[int]int{},
		expr: &predicate.Leaf{FieldID: 1, Name: "id", Op: predicate.OpLt},
		req:  &pushdown_pb.ParquetPushdownRequest{PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT, Predicate: []byte("substrait")}}
	need := &fileNeed{tops: []int{0, 1}, predIDs: []int{1}, outTops: []int{0, 1}}
	deleted := roaring64.BitmapOf(7)
	done := func(rows ...uint64) *pushdown_pb.ScanRowsResponse {
		return &pushdown_pb.ScanRowsResponse{Rows: bitmapBytes(t, rows...), RowCount: int64(len(rows)), ColumnsIpc: []byte("not arrow"), RowGroupDone: true}
	}
	for _, c := range []struct {
		name string
		v    *scanVolume
		want string
	}{
		{"an error", &scanVolume{err: status.Error(codes.ResourceExhausted, "too big")}, "too big"},
		{"a deleted row", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{done(3, 7)}}, "row 7 is deleted"},
		{"a row not planned", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{done(3, 150)}}, "row 150 was not planned"},
		{"IPC that does not decode after an empty batch", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{
			{Rows: bitmapBytes(t), RowCount: 0}, {Rows: bitmapBytes(t, 5), RowCount: 1, ColumnsIpc: []byte("x")}}}, "Arrow IPC"},
		{"a count that disagrees", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{{Rows: bitmapBytes(t, 3), RowCount: 2, RowGroupDone: true}}}, "says 2 rows and lists 1"},
		{"IPC that does not decode", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{done(3)}}, "Arrow IPC"},
		{"the stream ends early", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{{Rows: bitmapBytes(t), RowCount: 0}}}, "ended before row group 0 did"},
		{"another row group", &scanVolume{batches: []*pushdown_pb.ScanRowsResponse{{RowGroup: 1, Rows: bitmapBytes(t), RowGroupDone: true}}}, "a batch of row group 1"},
	} {
		ft, _ := testFetcher(t, ReadAuto, "AKGOOD", c.v)
		conn := &Connector{opts: Options{Mode: PageAware, FilterAt: FilterVolume}, fetch: ft}
		f := &fileRead{pf: testPlanned("volume"), fl: fl, need: need, rgRefs: []*pushdown_pb.RowGroupRef{
			{RowGroup: 0, RowCount: n, RowRanges: []*pushdown_pb.RowRange{{Start: 0, End: 100}}, DeletedPositions: bitmapBytes(t, 7)}}}
		r := &rowGroupRead{rg: 0, numRows: n, rows: plan.RowSet{{Start: 0, End: 100}}, deleted: deleted}
		counters := &scanCounters{}
		ctx := context.WithValue(context.Background(), scanCountersKey{}, counters)
		rec, ok, err := conn.volumeStage().filter(ctx, p, f, r)
		if ok || err != nil || rec != nil {
			t.Fatalf("%s: ok %v, err %v: want the row group read here", c.name, ok, err)
		}
		var st Stats
		counters.fill(&st, FilterVolume)
		if c.v.calls != 1 || st.FilterVolumeFallbacks != 1 || st.FilterVolumeRowGroups != 1 || !strings.Contains(st.FilterFallbackReason, c.want) || ft.vol.fallbacks.Load() != 1 {
			t.Fatalf("%s: %d calls, stats %+v: want one call, one fallback whose reason holds %q", c.name, c.v.calls, st, c.want)
		}
	}
}

// The volume is not asked, and the choice says why, when it cannot
// evaluate the predicate as the connector would: a residual part, a
// nested field, a column the file does not store, columns not mapped to
// field ids; -filterAt here never asks.
func TestTheVolumeIsNotAskedWhenItCannotEvaluateThePredicateAsHere(t *testing.T) {
	_, data := lateFile(t, false)
	one := 1
	mapped, err := newFileLayout("mem", int64(len(data)), layoutOf(t, "mem", data).md, iceberg.NameMapping{{FieldID: &one, Names: []string{"id"}}})
	if err != nil {
		t.Fatal(err)
	}
	unmapped := layoutOf(t, "mem", data)
	req := &pushdown_pb.ParquetPushdownRequest{PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT, Predicate: []byte("substrait")}
	leaf := &predicate.Leaf{FieldID: 1, Op: predicate.OpLt}
	for _, c := range []struct {
		name string
		p    *prepared
		fl   *fileLayout
		pred []int
		want string
	}{
		{"a residual", &prepared{req: req, expr: predicate.And{Kids: []predicate.Expr{leaf, predicate.Residual{Reason: "cast"}}}}, mapped, []int{1}, "residual"},
		{"a nested field", &prepared{req: req, expr: leaf, parents: map[int]int{1: 9}}, mapped, []int{1}, "nested"},
		{"a column the file lacks", &prepared{req: req, expr: &predicate.Leaf{FieldID: 2, Op: predicate.OpLt}}, mapped, []int{2}, "does not store"},
		{"no field ids", &prepared{req: req, expr: leaf}, unmapped, []int{1}, "not mapped"},
		{"no Substrait", &prepared{req: &pushdown_pb.ParquetPushdownRequest{}, expr: leaf}, mapped, []int{1}, "no Substrait"},
	} {
		f := &fileRead{fl: c.fl, need: &fileNeed{predIDs: c.pred}}
		if why := volumeCanFilter(c.p, f); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want a reason holding %q", c.name, why, c.want)
		}
	}
	conn := &Connector{opts: Options{FilterAt: FilterHere}} // no fetcher: asking would panic
	ctx := context.WithValue(context.Background(), scanCountersKey{}, &scanCounters{})
	if _, ok, err := conn.volumeStage().filter(ctx, &prepared{req: req, expr: leaf}, &fileRead{fl: mapped, need: &fileNeed{predIDs: []int{1}}}, &rowGroupRead{numRows: 10}); ok || err != nil {
		t.Fatalf("-filterAt here asked the volume: %v %v", ok, err)
	}
}

// -explain's estimate of filter sites counts exact row groups apart,
// keeps row groups of files without a volume route here, follows
// -filterAt, and otherwise applies the cost model to the plan's figures.
func TestExplainEstimatesWhereEachRowGroupWouldBeFiltered(t *testing.T) {
	resp := &pushdown_pb.ParquetPushdownResponse{
		Files:      []*pushdown_pb.PlannedFile{{File: "a", ReadEndpoint: "10.1.2.3:18888"}, {File: "b"}, {File: "c", ReadEndpoint: "127.0.0.1:18888"}},
		FileRanges: []*pushdown_pb.FileRange{{File: "a", Length: 128 << 20}, {File: "b", Length: 8 << 20}, {File: "c", Length: 8 << 20}},
		RowGroups: []*pushdown_pb.RowGroupRef{
			{File: "a", RowGroup: 0, RowCount: 100000},
			{File: "a", RowGroup: 1, RowCount: 100000, RowsExact: true},
			{File: "b", RowGroup: 0, RowCount: 100000},
			{File: "c", RowGroup: 0, RowCount: 100000},
		},
	}
	auto := ExplainFilterSites(resp, FilterAuto, 0)
	if auto.Exact != 1 || auto.Volume != 1 || auto.Here != 2 || !strings.Contains(auto.HereReason, "no volume pushdown service") || !strings.Contains(auto.VolumeReason, "holder remote") {
		t.Fatalf("auto: %+v: want the remote file's row group on the volume, the unrouted and on-this-host ones here, one exact", auto)
	}
	if v := ExplainFilterSites(resp, FilterVolume, 0); v.Volume != 2 || v.Here != 1 {
		t.Fatalf("-filterAt volume: %+v: want every routed row group on the volume", v)
	}
	if h := ExplainFilterSites(resp, FilterHere, 0); h.Volume != 0 || h.Here != 3 {
		t.Fatalf("-filterAt here: %+v: want every row group here", h)
	}
}

// recordingScanVolume answers ScanRows with fixed batches and keeps the
// requests it was sent.
type recordingScanVolume struct {
	scanVolume
	reqs []*pushdown_pb.ScanRowsRequest
}

func (v *recordingScanVolume) ScanRows(req *pushdown_pb.ScanRowsRequest, stream grpc.ServerStreamingServer[pushdown_pb.ScanRowsResponse]) error {
	v.reqs = append(v.reqs, req)
	return v.scanVolume.ScanRows(req, stream)
}

// ipcPiecesOf encodes recs as the pieces of one Arrow IPC stream: the
// first with the schema, each other one record batch message.
func ipcPiecesOf(t *testing.T, recs ...arrow.RecordBatch) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(recs[0].Schema()))
	var out [][]byte
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	return out
}

// The row groups of a file the volume filters are asked in one ScanRows
// call, whose batches' columns are pieces of one Arrow IPC stream (the
// schema sent once); each row group gets exactly its rows. A piece that
// continues a stream never started is a failed call: read here, counted.
func TestAFilesRowGroupsAreAskedInOneCallWhoseBatchesShareOneArrowStream(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "msg", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := range 2000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("m%d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000)))
	one, two := 1, 2
	base := layoutOf(t, "mem", data)
	fl, err := newFileLayout("mem", int64(len(data)), base.md, iceberg.NameMapping{{FieldID: &one, Names: []string{"id"}}, {FieldID: &two, Names: []string{"msg"}}})
	if err != nil {
		t.Fatal(err)
	}
	fl.chunks = base.chunks
	if fl.md.NumRowGroups() != 2 {
		t.Fatalf("%d row groups, want 2", fl.md.NumRowGroups())
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}, iceberg.NestedField{ID: 2, Name: "msg", Type: iceberg.PrimitiveTypes.String})
	p := &prepared{schema: sc, selectIDs: []int{1}, parents: map[int]int{},
		expr: &predicate.Leaf{FieldID: 1, Name: "id", Op: predicate.OpLt},
		req:  &pushdown_pb.ParquetPushdownRequest{PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT, Predicate: []byte("substrait")}}
	outSchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	need := &fileNeed{tops: []int{0, 1}, predIDs: []int{1}, outTops: []int{0}, outSchema: outSchema}
	refs := []*pushdown_pb.RowGroupRef{{RowGroup: 0, RowCount: 1000}, {RowGroup: 1, RowCount: 1000, FirstRow: 1000}}
	ids := func(vs ...int64) arrow.RecordBatch {
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), []arrow.Array{ints(vs...)}, int64(len(vs)))
	}
	pieces := ipcPiecesOf(t, ids(3, 5), ids(1010))
	run := func(batches []*pushdown_pb.ScanRowsResponse) (*recordingScanVolume, *fetcher, []arrow.RecordBatch, Stats) {
		v := &recordingScanVolume{scanVolume: scanVolume{batches: batches}}
		ft, _ := testFetcher(t, ReadAuto, "AKGOOD", v)
		conn := &Connector{opts: Options{Mode: PageAware, FilterAt: FilterVolume}, fetch: ft}
		f := &fileRead{pf: testPlanned("volume"), fl: fl, need: need, rgRefs: refs}
		counters := &scanCounters{}
		ctx := context.WithValue(context.Background(), scanCountersKey{}, counters)
		var out []arrow.RecordBatch
		for _, ref := range refs {
			r, err := f.rowGroupRead(ref, conn.opts.Mode == PageAware)
			if err != nil {
				t.Fatal(err)
			}
			rec, ok, err := conn.volumeStage().filter(ctx, p, f, r)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				out = append(out, rec)
			}
		}
		var st Stats
		counters.fill(&st, FilterVolume)
		return v, ft, out, st
	}
	v, ft, got, st := run([]*pushdown_pb.ScanRowsResponse{
		{RowGroup: 0, Rows: bitmapBytes(t, 3, 5), RowCount: 2, ColumnsIpc: pieces[0], RowsEvaluated: 1000, RowGroupDone: true},
		{RowGroup: 1, Rows: bitmapBytes(t, 10), RowCount: 1, ColumnsIpc: pieces[1], ColumnsIpcContinues: true, RowsEvaluated: 1000, RowGroupDone: true},
	})
	if len(v.reqs) != 1 || len(v.reqs[0].GetRowGroups()) != 2 || !v.reqs[0].GetIpcContinuation() {
		t.Fatalf("%d calls (%v): want one call asking both row groups as one IPC stream", len(v.reqs), v.reqs)
	}
	if len(got) != 2 || st.FilterVolumeRowGroups != 2 || st.FilterVolumeFallbacks != 0 || st.FilterVolumeRows != 3 || ft.vol.calls.Load() != 1 {
		t.Fatalf("%d records, stats %+v, %d calls: want both row groups from one call", len(got), st, ft.vol.calls.Load())
	}
	for i, want := range [][]int64{{3, 5}, {1010}} {
		col := got[i].Column(0).(*array.Int64)
		if !slices.Equal(col.Int64Values(), want) {
			t.Fatalf("row group %d: ids %v, want %v", i, col.Int64Values(), want)
		}
		got[i].Release()
	}

	_, ft, got, st = run([]*pushdown_pb.ScanRowsResponse{
		{RowGroup: 0, Rows: bitmapBytes(t, 1010-1000), RowCount: 1, ColumnsIpc: pieces[1], ColumnsIpcContinues: true, RowGroupDone: true},
	})
	if len(got) != 0 || st.FilterVolumeFallbacks != 2 || !strings.Contains(st.FilterFallbackReason, "never started") || ft.vol.fallbacks.Load() != 2 {
		t.Fatalf("%d records, stats %+v: want both row groups read here, the reason naming the stream never started", len(got), st)
	}
}
