package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// listWriters are the ways arrow-go writes a list column's pages: V1
// without a page index splits records across pages (it cuts pages every
// write batch of levels, wherever a record is); V1 with a page index and
// V2 start every page at a row.
var listWriters = []struct {
	name  string
	props []parquet.WriterProperty
	split bool // some page starts inside a record
}{
	{"V1, no page index", []parquet.WriterProperty{parquet.WithPageIndexEnabled(false)}, true},
	{"V1, page index", []parquet.WriterProperty{parquet.WithPageIndexEnabled(true)}, false},
	{"V2, no page index", []parquet.WriterProperty{parquet.WithPageIndexEnabled(false), parquet.WithDataPageVersion(parquet.DataPageV2)}, false},
}

// listFile writes rows of (id, tags list<string>) with NULL lists, empty
// lists, NULL elements, duplicate elements and, every 97th row, a list of
// 40-120 elements spanning several small pages; large: tags is a large
// list (64-bit offsets; the Arrow schema stored in the file says so).
func listFile(t *testing.T, rows int, dict, large bool, props []parquet.WriterProperty) []byte {
	t.Helper()
	typ := arrow.DataType(arrow.ListOf(arrow.BinaryTypes.String))
	if large {
		typ = arrow.LargeListOf(arrow.BinaryTypes.String)
	}
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: typ, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	r := rand.New(rand.NewPCG(5, 7))
	lb := b.Field(1).(array.ListLikeBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		switch {
		case i%11 == 3:
			lb.AppendNull()
			continue
		case i%13 == 5:
			lb.Append(true) // empty
			continue
		}
		lb.Append(true)
		n := 1 + r.IntN(4)
		if i%97 == 0 {
			n = 40 + r.IntN(80)
		}
		for k := 0; k < n; k++ {
			switch {
			case r.IntN(15) == 0:
				vb.AppendNull()
			case r.IntN(6) == 0 && k > 0:
				vb.Append(fmt.Sprintf("tag-%d", (i+k-1)%9)) // often a duplicate of the one before
			default:
				vb.Append(fmt.Sprintf("tag-%d", (i+k)%9))
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	all := append([]parquet.WriterProperty{parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(256), parquet.WithBatchSize(7),
		parquet.WithMaxRowGroupLength(int64(rows) / 2)}, props...)
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(all...), pqarrow.WithStoreSchema())
}

type bytesSource []byte

func (m bytesSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m)) {
		return 0, fmt.Errorf("read [%d, +%d) outside %d bytes", off, len(p), len(m))
	}
	return copy(p, m[off:]), nil
}
func (m bytesSource) Size() int64 { return int64(len(m)) }

// sidePagesOf builds the page_index side index of data's list column
// (leaf 1) and returns its pages per row group.
func sidePagesOf(t *testing.T, data []byte) [][]footer.Page {
	t.Helper()
	ctx := context.Background()
	ft, err := footer.Load(ctx, footer.Identity{Path: "mem", Size: int64(len(data))}, bytesSource(data))
	if err != nil {
		t.Fatal(err)
	}
	typ := &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}
	in := sideindex.Input{File: "s3://b/t/data/f.parquet", Identity: footer.IdentityDir(ft.ID.Size, ft.NumRows(), ft.Hash), Footer: ft,
		Source: bytesSource(data), FieldID: 2, Type: typ, Column: 1}
	kind, _ := sideindex.Lookup("page_index")
	payload, err := kind.Build(ctx, in)
	if err != nil {
		t.Fatalf("build page_index of the list column: %v", err)
	}
	idx, err := kind.Open(ctx, payload, sideindex.Header{Kind: "page_index", FieldID: 2, IcebergType: typ.String(), DataFile: in.File,
		Identity: in.Identity, Rows: ft.NumRows()})
	if err != nil {
		t.Fatalf("open page_index of the list column: %v", err)
	}
	src := idx.(sideindex.PageIndexSource)
	var out [][]footer.Page
	for rg := 0; rg < src.RowGroups(); rg++ {
		rgi, err := src.RowGroupIndex(rg)
		if err != nil {
			t.Fatal(err)
		}
		cpi := rgi.Columns[1]
		if cpi.SpansErr != nil {
			t.Fatalf("row group %d: %v", rg, cpi.SpansErr)
		}
		out = append(out, cpi.Pages)
	}
	return out
}

// dataPagesOf counts the data pages arrow-go wrote in data's column col.
func dataPagesOf(t *testing.T, data []byte, rg, col int) int {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := rdr.RowGroup(rg).GetColumnPageReader(col)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for pr.Next() {
		switch pr.Page().Type() {
		case file.PageTypeDataPage, file.PageTypeDataPageV2:
			n++
		}
	}
	return n
}

func rowJSON(t *testing.T, arr arrow.Array, i int) string {
	t.Helper()
	b, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listMapping chooses the planned pages of a list column for wanted rows
// (the planner's rule, or a mutant of it) and how refs mark them.
type listMapping struct {
	name string
	// held are the rows with levels in page i of pages
	held func(pages []footer.Page, i int) (start, end int64)
	// inside is page i's startsInside as the plan gives it
	inside func(pages []footer.Page, i int) bool
}

var (
	plannedMapping = listMapping{"the planner's", func(pages []footer.Page, i int) (int64, int64) { return pages[i].HeldRows() },
		func(pages []footer.Page, i int) bool { return pages[i].StartsInsideRow }}
	// mutants: a page's rows without the row it continues (off by one
	// row), and the mark of the page before (off by one page)
	offByOneMappings = []listMapping{
		{"rows starting in a page only", func(pages []footer.Page, i int) (int64, int64) { return pages[i].FirstRow, pages[i].EndRow },
			plannedMapping.inside},
		{"continued marks a page late", plannedMapping.held,
			func(pages []footer.Page, i int) bool { return i > 0 && pages[i-1].StartsInsideRow }},
	}
	// a wider mapping (each page also holds the row before its rows)
	// costs pages, never rows
	widerMapping = listMapping{"one row more", func(pages []footer.Page, i int) (int64, int64) {
		start, end := pages[i].HeldRows()
		return max(0, start-1), end
	}, plannedMapping.inside}
)

// planListPages is the pages of a row group m plans for rows, as refs
// give them to the page decoder.
func (m listMapping) planListPages(pages []footer.Page, rows plan.RowSet) []pageRange {
	var sel []pageRange
	for i, pg := range pages {
		if !rows.Overlaps(m.held(pages, i)) {
			continue
		}
		p := pageRangeOf(pg)
		p.startsInside = m.inside(pages, i)
		p.endsInside = i+1 < len(pages) && m.inside(pages, i+1)
		sel = append(sel, p)
	}
	return sel
}

// randomRows are a few single rows and short runs of a row group.
func randomRows(r *rand.Rand, numRows int64) plan.RowSet {
	var rs []plan.RowRange
	for k := 1 + r.IntN(4); k > 0; k-- {
		start := r.Int64N(numRows)
		rs = append(rs, plan.RowRange{Start: start, End: min(numRows, start+1+r.Int64N(40)*r.Int64N(2))})
	}
	return plan.Union(nil, rs)
}

// decodeListTrial decodes the pages m plans for rows and compares every
// row the decoder returns with the whole chunk's; it reports a planned
// row not returned, a row that differs, or the decoder's refusal.
func decodeListTrial(ctx context.Context, t *testing.T, fl *fileLayout, sf *sparseFile, rg int, numRows int64, pages []footer.Page,
	dict map[int]byteRange, want arrow.Array, rows plan.RowSet, m listMapping) (checked int, bad error) {
	t.Helper()
	sel := m.planListPages(pages, rows)
	rd := &rowGroupRead{rg: rg, numRows: numRows, pages: map[int][]pageRange{1: sel}, dict: dict, rows: rows}
	if !fl.pageAwareOK(1, rd) {
		return 0, fmt.Errorf("planned list pages not decoded page by page")
	}
	col, err := decodePages(ctx, fl, sf, rd, 1)
	if err != nil {
		return 0, err
	}
	defer col.arr.Release()
	if !arrow.TypeEqual(col.arr.DataType(), want.DataType()) {
		t.Fatalf("planned list pages decode as %s, the whole chunk as %s", col.arr.DataType(), want.DataType())
	}
	for i, row := range col.rows {
		if got, exp := rowJSON(t, col.arr, i), rowJSON(t, want, int(row)); got != exp {
			return checked, fmt.Errorf("row %d decodes as %s, the whole chunk has %s", row, got, exp)
		}
		checked++
	}
	for _, rr := range rows {
		for row := rr.Start; row < rr.End; row++ {
			if col.index(row) < 0 {
				return checked, fmt.Errorf("planned row %d not decoded", row)
			}
		}
	}
	return checked, nil
}

// TestListPagesOfASidePageIndexDecodeAloneToExactlyTheirRows builds the
// page_index side index of a list column for each way arrow-go writes
// one, plans its pages for random rows as the planner does (every page
// holding levels of a wanted row) and decodes them through the
// connector's page decoder: every row it returns is exactly the whole
// chunk's — NULL lists, empty lists, NULL and duplicate elements,
// records spanning pages, runs starting inside a record (its leading
// levels dropped) or ending inside one (the truncated record dropped).
// On the V1 writer without a page index, pages start inside records: the
// index lists them as written, marked, and a mapping off by one row or
// one page fails (a refusal or a wrong row) while one planning a row
// more stays exact.
func TestListPagesOfASidePageIndexDecodeAloneToExactlyTheirRows(t *testing.T) {
	ctx := context.Background()
	for _, w := range listWriters {
		for _, v := range []struct{ dict, large bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("%s, dictionary %v, large list %v", w.name, v.dict, v.large)
			data := listFile(t, 3000, v.dict, v.large, w.props)
			fl := layoutOf(t, "mem", data)
			sf := sparseOf(data)
			side := sidePagesOf(t, data)
			r := rand.New(rand.NewPCG(11, uint64(len(name))))
			split, checked, tails := false, 0, 0
			caught := make([]int, len(offByOneMappings))
			for rg, pages := range side {
				numRows := fl.md.RowGroup(rg).NumRows()
				if written := dataPagesOf(t, data, rg, 1); len(pages) != written {
					t.Fatalf("%s rg %d: side index lists %d pages, the writer wrote %d", name, rg, len(pages), written)
				}
				if len(pages) < 4 {
					t.Fatalf("%s rg %d: %d pages, want several", name, rg, len(pages))
				}
				for _, pg := range pages {
					split = split || pg.StartsInsideRow
				}
				whole, err := decodeWhole(ctx, fl, sf, rg, []int{1})
				if err != nil {
					t.Fatal(err)
				}
				want := whole[1].arr
				ch := fl.chunks[rg][1]
				var dict map[int]byteRange
				if first := pages[0].Offset; first > ch.Start {
					dict = map[int]byteRange{1: {Off: ch.Start, Len: first - ch.Start}}
				}
				for trial := 0; trial < 60; trial++ {
					rows := randomRows(r, numRows)
					if trial < len(pages) { // each page's first row, and the row it continues
						rows = plan.Union(rows, []plan.RowRange{{Start: max(0, pages[trial].FirstRow-1), End: min(numRows, pages[trial].FirstRow+1)}})
					}
					for _, m := range []listMapping{plannedMapping, widerMapping} {
						n, err := decodeListTrial(ctx, t, fl, sf, rg, numRows, pages, dict, want, rows, m)
						if err != nil {
							t.Fatalf("%s rg %d, rows %v, %s mapping: %v", name, rg, rows, m.name, err)
						}
						checked += n
					}
					sel := plannedMapping.planListPages(pages, rows)
					for i, p := range sel {
						if p.startsInside && (i == 0 || sel[i-1].Off+sel[i-1].Len != p.Off) {
							tails++ // a run starting inside a row
						}
					}
					for i, m := range offByOneMappings {
						if _, err := decodeListTrial(ctx, t, fl, sf, rg, numRows, pages, dict, want, rows, m); err != nil {
							caught[i]++
						}
					}
				}
				want.Release()
			}
			if split != w.split {
				t.Fatalf("%s: pages start inside a record %v, want %v (does the writer still split records across pages?)", name, split, w.split)
			}
			if w.split && tails == 0 {
				t.Fatalf("%s: no planned run starts inside a row", name)
			}
			for i, m := range offByOneMappings {
				if w.split && caught[i] == 0 {
					t.Fatalf("%s: the mapping %q was never caught", name, m.name)
				}
			}
			t.Logf("%s: %d rows checked, %d planned runs start inside a row, off-by-one mappings caught %v times", name, checked, tails, caught)
		}
	}
}

// The first repetition level of a page is read from either form of the
// RLE/bit-packed hybrid (bit width 1); anything else is not understood.
func TestTheFirstRepetitionLevelOfAPageIsReadFromRunsAndBitPackedGroups(t *testing.T) {
	for _, c := range []struct {
		b     []byte
		first int
		ok    bool
	}{
		{[]byte{7 << 1, 0}, 0, true},         // a run of 7 zeros
		{[]byte{3 << 1, 1}, 1, true},         // a run of 3 ones
		{[]byte{1<<1 | 1, 0b10110}, 0, true}, // one bit-packed group, first bit 0
		{[]byte{2<<1 | 1, 0b1, 0}, 1, true},  // two groups, first bit 1
		{[]byte{0x80, 0x01, 0}, 0, true},     // a two-byte varint header: a run of 64
		{[]byte{5 << 1}, 0, false},           // a run without its value
		{[]byte{0, 0}, 0, false},             // a run of none
		{[]byte{4 << 1, 2}, 0, false},        // a value above the bit width
		{nil, 0, false},
	} {
		first, ok := firstLevel(c.b)
		if ok != c.ok || ok && first != c.first {
			t.Fatalf("% x: first level %d (%v), want %d (%v)", c.b, first, ok, c.first, c.ok)
		}
	}
}
