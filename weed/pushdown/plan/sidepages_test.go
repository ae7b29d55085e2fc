package plan

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// builtSidePages serves side page indexes built by the page_index kind
// from the bytes of in-memory files, as volume services would.
type builtSidePages struct {
	fields []int
	// byFile[path][field] are the opened indexes.
	byFile map[string]map[int]sideindex.PageIndexSource
	asked  int
}

func (s *builtSidePages) PageIndexFields() []int { return s.fields }

func (s *builtSidePages) PageIndexes(_ context.Context, files []*DataFile, fields [][]int) ([]map[int][]footer.SidePageIndex, [][]string, error) {
	out := make([]map[int][]footer.SidePageIndex, len(files))
	for i, f := range files {
		out[i] = map[int][]footer.SidePageIndex{}
		for _, id := range fields[i] {
			s.asked++
			idx, ok := s.byFile[f.Path][id]
			if !ok {
				continue
			}
			for rg := 0; rg < idx.RowGroups(); rg++ {
				g, err := idx.SidePageIndex(rg)
				if err != nil {
					return nil, nil, err
				}
				out[i][id] = append(out[i][id], g)
			}
		}
	}
	return out, nil, nil
}

// TestSidePageIndexesPlanTheSamePagesAndBytesAsNativeOnes writes each
// page-indexed variant of the differential suite a second time without a
// page index (same rows, same writer settings otherwise: the same pages at
// the same offsets), gives the twin side page indexes of every column, and
// checks random predicates plan exactly the same row groups, row ranges,
// pages and file ranges on both — and never drop a row of the twin.
func TestSidePageIndexesPlanTheSamePagesAndBytesAsNativeOnes(t *testing.T) {
	ctx := context.Background()
	cols := genColumns()
	_, schema := genSchemas(cols)
	mem := memFiles{}
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	type twin struct {
		native, side DataFile
		df           *decodedFile
	}
	var twins []twin
	src := &builtSidePages{byFile: map[string]map[int]sideindex.PageIndexSource{}}
	for _, f := range schema.Fields() {
		src.fields = append(src.fields, f.ID)
	}
	for i, v := range variants {
		if !v.pageIndex {
			continue
		}
		withIndex := writeVariant(t, cols, v, 3600, uint64(100+i))
		v.pageIndex = false
		without := writeVariant(t, cols, v, 3600, uint64(100+i))
		df := decodeAll(t, withIndex, schema)
		tw := twin{df: df,
			native: DataFile{Path: fmt.Sprintf("s3://t/data/native-%d.parquet", i), Size: int64(len(withIndex)), RecordCount: df.Rows, Stats: manifestStatsOf(t, df, schema)},
			side:   DataFile{Path: fmt.Sprintf("s3://t/data/side-%d.parquet", i), Size: int64(len(without)), RecordCount: df.Rows, Stats: manifestStatsOf(t, df, schema)}}
		mem[tw.native.Path], mem[tw.side.Path] = withIndex, without
		ft, _, err := p.Cache.Get(ctx, footer.Identity{Path: tw.side.Path, Size: tw.side.Size})
		if err != nil {
			t.Fatal(err)
		}
		if ft.HasPageIndex() {
			t.Fatalf("%s: the twin written without a page index has one", v.name)
		}
		cm := NewColumnMap(ft.Meta.Schema, nil)
		src.byFile[tw.side.Path] = map[int]sideindex.PageIndexSource{}
		for _, f := range schema.Fields() {
			col, ok := cm.Leaf(f.ID)
			if !ok {
				continue
			}
			in := sideindex.Input{File: tw.side.Path, Identity: footer.IdentityDir(tw.side.Size, df.Rows, ft.Hash), Footer: ft,
				Source: memSource(without), FieldID: f.ID, Type: f.Type, Column: col}
			kind, _ := sideindex.Lookup("page_index")
			payload, err := kind.Build(ctx, in)
			if err != nil {
				t.Fatalf("%s: build page_index of %s: %v", v.name, f.Name, err)
			}
			idx, err := kind.Open(ctx, payload, sideindex.Header{Kind: "page_index", FieldID: f.ID, IcebergType: f.Type.String(),
				DataFile: in.File, Identity: in.Identity, Rows: df.Rows})
			if err != nil {
				t.Fatalf("%s: open page_index of %s: %v", v.name, f.Name, err)
			}
			src.byFile[tw.side.Path][f.ID] = idx.(sideindex.PageIndexSource)
		}
		twins = append(twins, tw)
	}
	r := rand.New(rand.NewPCG(7, 3))
	n := 300
	if testing.Short() {
		n = 60
	}
	var narrowed int
	for i := 0; i < n; i++ {
		tw := twins[i%len(twins)]
		raw := randomPredicate(r, schema, tw.df, 2)
		e, err := predicate.Bind(raw, schema, predicate.DefaultLimits)
		if err != nil {
			t.Fatalf("bind %s: %v", raw, err)
		}
		var proj []int
		if r.IntN(2) == 0 {
			proj = []int{1 + r.IntN(19), 1 + r.IntN(19)}
		}
		plan := func(f DataFile, sp SidePageIndexSource) (*pushdown_pb.ParquetPushdownResponse, *FilePlan) {
			resp, plans, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{f}, Predicate: e, Projection: proj,
				Options: DefaultOptions(), SidePages: sp})
			if err != nil {
				t.Fatalf("plan %s: %v", e, err)
			}
			return resp, plans[0]
		}
		want, _ := plan(tw.native, nil)
		got, fp := plan(tw.side, src)
		checkPlan(t, "side twin", e, tw.df, fp, got)
		checkPagesCoverRows(t, "side twin", e, fp, got)
		if g, w := planShape(got), planShape(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s projecting %v: the plans differ (%d and %d parts): %s", e, proj, len(g), len(w), firstDifference(g, w))
		}
		if got.Stats.PagesPruned > 0 {
			narrowed++
		}
	}
	if narrowed == 0 {
		t.Fatal("no predicate pruned a page: the test does not exercise page-granular plans")
	}
	t.Logf("%d predicates, %d pruned pages; %d side page indexes asked (later plans are served by the footer cache)", n, narrowed, src.asked)
}

// planShape is what a reader does with a plan: row groups and their row
// ranges, and pages by column, number and rows. Offsets are left out: a
// writer leaves page statistics out of the page headers when it writes a
// page index, so the twins' pages are the same rows in slightly different
// bytes (checkPagesCoverRows checks the side plan's bytes against its own
// file).
func planShape(resp *pushdown_pb.ParquetPushdownResponse) []string {
	var out []string
	for _, rg := range resp.GetRowGroups() {
		out = append(out, fmt.Sprintf("rg %d rows %v", rg.GetRowGroup(), rg.GetRowRanges()))
	}
	for _, pg := range resp.GetPages() {
		out = append(out, fmt.Sprintf("page rg %d col %s #%d rows %d+%d dict %v", pg.GetRowGroup(), pg.GetColumn().GetPath(), pg.GetPage(),
			pg.GetFirstRowIndex(), pg.GetRowCount(), pg.GetDictionary()))
	}
	out = append(out, fmt.Sprintf("pages %d of %d", resp.GetStats().GetPagesTotal()-resp.GetStats().GetPagesPruned(), resp.GetStats().GetPagesTotal()))
	return out
}

// firstDifference names the first part where got and want differ.
func firstDifference(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("part %d: with side page indexes %q, natively %q", i, g, w)
		}
	}
	return "none"
}

// brokenSidePages serves page indexes that are not what the file needs.
type brokenSidePages struct {
	fields []int
	serve  func(file string, field int) []footer.SidePageIndex
}

func (s brokenSidePages) PageIndexFields() []int { return s.fields }

func (s brokenSidePages) PageIndexes(_ context.Context, files []*DataFile, fields [][]int) ([]map[int][]footer.SidePageIndex, [][]string, error) {
	out := make([]map[int][]footer.SidePageIndex, len(files))
	for i, f := range files {
		out[i] = map[int][]footer.SidePageIndex{}
		for _, id := range fields[i] {
			out[i][id] = s.serve(f.Path, id)
		}
	}
	return out, nil, nil
}

// TestSidePageIndexesThatDoNotFitTheFileAreIgnoredAndCostNoRow serves
// garbage, truncated bytes, another column's index and the wrong number of
// row groups: nothing is attached, the plan names page_index as missing,
// reads the file by row group and keeps every matching row.
func TestSidePageIndexesThatDoNotFitTheFileAreIgnoredAndCostNoRow(t *testing.T) {
	ctx := context.Background()
	cols := genColumns()
	_, schema := genSchemas(cols)
	v := variants[0]
	v.pageIndex = false
	data := writeVariant(t, cols, v, 3600, 100)
	withIndex := variants[0]
	other := writeVariant(t, cols, withIndex, 3600, 7) // another file's (native) page index
	df := decodeAll(t, data, schema)
	mem := memFiles{"s3://t/data/f.parquet": data, "s3://t/data/o.parquet": other}
	file := DataFile{Path: "s3://t/data/f.parquet", Size: int64(len(data)), RecordCount: df.Rows, Stats: manifestStatsOf(t, df, schema)}
	var ids []int
	for _, f := range schema.Fields() {
		ids = append(ids, f.ID)
	}
	otherFooter, _, err := footer.NewCache("o", 16<<20, mem.open).Get(ctx, footer.Identity{Path: "s3://t/data/o.parquet", Size: int64(len(other))})
	if err != nil {
		t.Fatal(err)
	}
	// The other file's raw page index region, entry by entry: real Thrift,
	// wrong file (its pages do not tile this file's chunks).
	foreign := func(field int) []footer.SidePageIndex {
		cm := NewColumnMap(otherFooter.Meta.Schema, nil)
		col, _ := cm.Leaf(field)
		var out []footer.SidePageIndex
		for rg := range otherFooter.Chunks {
			ch := otherFooter.Chunks[rg][col]
			if ch.OffsetIndex == nil {
				return nil
			}
			out = append(out, footer.SidePageIndex{Offset: other[ch.OffsetIndex.Offset : ch.OffsetIndex.Offset+int64(ch.OffsetIndex.Length)]})
		}
		return out
	}
	rgs := 0
	for _, variant := range map[string]func(string, int) []footer.SidePageIndex{
		"garbage": func(string, int) []footer.SidePageIndex {
			return []footer.SidePageIndex{{Offset: []byte("not thrift at all")}}
		},
		"truncated": func(_ string, f int) []footer.SidePageIndex {
			g := foreign(f)
			for i := range g {
				g[i].Offset = g[i].Offset[:len(g[i].Offset)/2]
			}
			return g
		},
		"another file's": func(_ string, f int) []footer.SidePageIndex { return foreign(f) },
		"too few row groups": func(_ string, f int) []footer.SidePageIndex {
			g := foreign(f)
			if len(g) > 0 {
				g = g[:len(g)-1]
			}
			return g
		},
	} {
		p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
		src := brokenSidePages{fields: ids, serve: variant}
		r := rand.New(rand.NewPCG(9, 4))
		for i := 0; i < 40; i++ {
			e, err := predicate.Bind(randomPredicate(r, schema, df, 2), schema, predicate.DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			resp, plans, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{file}, Predicate: e, Options: DefaultOptions(), SidePages: src})
			if err != nil {
				t.Fatalf("plan %s: %v", e, err)
			}
			checkPlan(t, "broken side pages", e, df, plans[0], resp)
			if len(resp.GetPages()) != 0 {
				t.Fatalf("%s page indexes were used: %d pages planned", "broken", len(resp.GetPages()))
			}
			if plans[0].Footer != nil && plans[0].Footer.HasPageIndex() {
				t.Fatal("a page index that does not fit the file was attached")
			}
			rgs += len(resp.GetRowGroups())
		}
	}
	if rgs == 0 {
		t.Fatal("no predicate kept a row group: the test checks nothing")
	}
}

// positionsSideIndex answers every file with the same positions.
type positionsSideIndex struct{ bm *roaring64.Bitmap }

func (s positionsSideIndex) Select(_ context.Context, files []*DataFile, _ int64) ([]*roaring64.Bitmap, SideIndexNotes, error) {
	out := make([]*roaring64.Bitmap, len(files))
	for i := range out {
		out[i] = s.bm
	}
	return out, SideIndexNotes{}, nil
}

// listPagesFile writes (id, tags list<string>) with "gpu" in two bursts,
// small pages cut every 7 levels (arrow-go's V1 writer without a page
// index then starts pages inside records).
func listPagesFile(t *testing.T, pageIndex bool) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldMeta(1)},
		{Name: "tags", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldMeta(3)}),
			Nullable: true, Metadata: fieldMeta(2)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for i := 0; i < 6000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%17 == 4 {
			lb.AppendNull()
			continue
		}
		lb.Append(true)
		for k := 0; k < i%4; k++ {
			vb.Append(fmt.Sprintf("t%d", (i+k)%5))
		}
		if (i >= 1000 && i < 1100) || (i >= 4500 && i < 4520) {
			vb.Append("gpu")
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithPageIndexEnabled(pageIndex), parquet.WithDataPageSize(256), parquet.WithBatchSize(7),
		parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(3000))
	tbl := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, 3000, props, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAListColumnIsPlannedByPageOnlyWhereAPageIndexSideIndexListsItsPages:
// array_contains answered by a side index narrows row ranges; the list
// column tags is then planned as the pages holding those rows when a
// page_index side index of tags is attached (its pages start at rows),
// and as whole chunks when only id has one, or when the file's own page
// index is all there is (not every writer starts a list's pages at rows).
// Every matching row lies in a planned page of every projected column,
// and for scattered candidate rows every tags page continuing one (the
// writer starts pages inside records) is planned too, marked.
func TestAListColumnIsPlannedByPageOnlyWhereAPageIndexSideIndexListsItsPages(t *testing.T) {
	ctx := context.Background()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	plainData, nativeData := listPagesFile(t, false), listPagesFile(t, true)
	mem := memFiles{"s3://t/data/plain.parquet": plainData, "s3://t/data/native.parquet": nativeData}
	df := decodeAll(t, plainData, schema)
	e, err := predicate.Bind(&predicate.Leaf{FieldID: 2, Op: predicate.OpArrayContains, Raw: []iceberg.Literal{iceberg.StringLiteral("gpu")}}, schema, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	matching := roaring64.New()
	for _, p := range df.Matching(e.(*predicate.Leaf)) {
		matching.Add(uint64(p))
	}
	if matching.GetCardinality() != 113 { // 120 in the bursts, less 7 NULL lists
		t.Fatalf("%d rows hold gpu, want 113", matching.GetCardinality())
	}
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	plainFile := DataFile{Path: "s3://t/data/plain.parquet", Size: int64(len(plainData)), RecordCount: df.Rows}
	nativeFile := DataFile{Path: "s3://t/data/native.parquet", Size: int64(len(nativeData)), RecordCount: df.Rows}
	ft, _, err := p.Cache.Get(ctx, footer.Identity{Path: plainFile.Path, Size: plainFile.Size})
	if err != nil {
		t.Fatal(err)
	}
	src := &builtSidePages{byFile: map[string]map[int]sideindex.PageIndexSource{plainFile.Path: {}}}
	kind, _ := sideindex.Lookup("page_index")
	for col, f := range []iceberg.NestedField{schema.Field(0), schema.Field(1)} {
		in := sideindex.Input{File: plainFile.Path, Identity: footer.IdentityDir(plainFile.Size, df.Rows, ft.Hash), Footer: ft,
			Source: memSource(plainData), FieldID: f.ID, Type: f.Type, Column: col}
		payload, err := kind.Build(ctx, in)
		if err != nil {
			t.Fatalf("build page_index of %s: %v", f.Name, err)
		}
		idx, err := kind.Open(ctx, payload, sideindex.Header{Kind: "page_index", FieldID: f.ID, IcebergType: f.Type.String(),
			DataFile: in.File, Identity: in.Identity, Rows: df.Rows})
		if err != nil {
			t.Fatalf("open page_index of %s: %v", f.Name, err)
		}
		src.byFile[plainFile.Path][f.ID] = idx.(sideindex.PageIndexSource)
	}
	for _, c := range []struct {
		name      string
		file      DataFile
		fields    []int
		tagsPages bool
	}{
		{"side page indexes of id and tags", plainFile, []int{1, 2}, true},
		{"a side page index of id only", plainFile, []int{1}, false},
		{"the file's own page index", nativeFile, nil, false},
	} {
		p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
		var sp SidePageIndexSource
		if c.fields != nil {
			sp = &builtSidePages{fields: c.fields, byFile: src.byFile}
		}
		resp, plans, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{c.file}, Predicate: e, Options: DefaultOptions(),
			SidePages: sp, SideIndex: positionsSideIndex{matching}})
		if err != nil {
			t.Fatalf("%s: plan: %v", c.name, err)
		}
		checkPlan(t, c.name, e, df, plans[0], resp)
		checkPagesCoverRows(t, c.name, e, plans[0], resp)
		var tagsPages, tagsBytes int64
		for _, pg := range resp.GetPages() {
			if pg.GetColumn().GetPath() == "tags.list.element" && !pg.GetDictionary() {
				tagsPages++
				tagsBytes += pg.GetLength()
			}
		}
		if (tagsPages > 0) != c.tagsPages {
			t.Fatalf("%s: %d tags pages planned, want pages %v", c.name, tagsPages, c.tagsPages)
		}
		if c.tagsPages {
			var chunkBytes int64
			for rg := range plans[0].Footer.Chunks {
				chunkBytes += plans[0].Footer.Chunks[rg][1].Length
			}
			if 4*tagsBytes > chunkBytes {
				t.Fatalf("%s: %d bytes of tags pages planned of %d: want a fraction", c.name, tagsBytes, chunkBytes)
			}
			t.Logf("%s: %d tags pages, %d of %d bytes", c.name, tagsPages, tagsBytes, chunkBytes)
		}
	}
	// scattered candidate rows: every page holding levels of a planned
	// row is planned, those starting inside a row among them
	r := rand.New(rand.NewPCG(3, 5))
	continued := 0
	for trial := 0; trial < 40; trial++ {
		rows := roaring64.New()
		for k := 0; k < 20+r.IntN(30); k++ {
			rows.Add(uint64(r.Int64N(df.Rows)))
		}
		p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
		resp, plans, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{plainFile}, Predicate: e, Options: DefaultOptions(),
			SidePages: &builtSidePages{fields: []int{1, 2}, byFile: src.byFile}, SideIndex: positionsSideIndex{rows}})
		if err != nil {
			t.Fatalf("scattered rows: plan: %v", err)
		}
		checkPagesCoverRows(t, "scattered rows", e, plans[0], resp)
		for _, pg := range resp.GetPages() {
			if pg.GetStartsInsideRow() {
				continued++
			}
		}
	}
	if continued == 0 {
		t.Fatal("no planned tags page starts inside a row: the test checks nothing")
	}
}
