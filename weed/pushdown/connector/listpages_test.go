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
// 40-120 elements spanning several small pages.
func listFile(t *testing.T, rows int, dict bool, props []parquet.WriterProperty) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	r := rand.New(rand.NewPCG(5, 7))
	lb := b.Field(1).(*array.ListBuilder)
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
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(all...))
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

// TestListPagesOfASidePageIndexDecodeAloneToExactlyTheirRows builds the
// page_index side index of a list column for each way arrow-go writes
// one, and decodes page runs chosen at random (one page, neighbours,
// gaps) through the connector's page decoder: each run gives exactly the
// rows of its pages, as the whole chunk decodes them — NULL lists, empty
// lists, NULL and duplicate elements, records spanning pages. On the V1
// writer without a page index, pages start inside records: the index
// must have merged them (fewer pages than written), or a page read alone
// would return part of a record.
func TestListPagesOfASidePageIndexDecodeAloneToExactlyTheirRows(t *testing.T) {
	ctx := context.Background()
	for _, w := range listWriters {
		for _, dict := range []bool{false, true} {
			name := fmt.Sprintf("%s, dictionary %v", w.name, dict)
			data := listFile(t, 3000, dict, w.props)
			fl := layoutOf(t, "mem", data)
			sf := sparseOf(data)
			side := sidePagesOf(t, data)
			r := rand.New(rand.NewPCG(11, uint64(len(name))))
			merged, checked := false, 0
			for rg, pages := range side {
				numRows := fl.md.RowGroup(rg).NumRows()
				if written := dataPagesOf(t, data, rg, 1); len(pages) < written {
					merged = true
				} else if len(pages) != written {
					t.Fatalf("%s rg %d: side index lists %d pages, the writer wrote %d", name, rg, len(pages), written)
				}
				if len(pages) < 4 {
					t.Fatalf("%s rg %d: %d pages, want several", name, rg, len(pages))
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
				for trial := 0; trial < 40; trial++ {
					var sel []pageRange
					var rows []plan.RowRange
					for i, pg := range pages {
						if trial < len(pages) && i != trial || trial >= len(pages) && r.IntN(3) != 0 {
							continue
						}
						sel = append(sel, pageRange{byteRange{Off: pg.Offset, Len: pg.Length}, pg.FirstRow, pg.EndRow - pg.FirstRow})
						rows = append(rows, plan.RowRange{Start: pg.FirstRow, End: pg.EndRow})
					}
					if len(sel) == 0 || len(sel) == len(pages) {
						continue
					}
					rd := &rowGroupRead{rg: rg, numRows: numRows, pages: map[int][]pageRange{1: sel}, dict: dict, rows: plan.Union(nil, rows)}
					if !fl.pageAwareOK(1, rd) {
						t.Fatalf("%s rg %d: planned list pages not decoded page by page", name, rg)
					}
					col, err := decodePages(ctx, fl, sf, rd, 1)
					if err != nil {
						t.Fatalf("%s rg %d, %d pages: %v", name, rg, len(sel), err)
					}
					for i, row := range col.rows {
						if got, exp := rowJSON(t, col.arr, i), rowJSON(t, want, int(row)); got != exp {
							t.Fatalf("%s rg %d, pages from row %d: row %d decodes as %s, the whole chunk has %s", name, rg, sel[0].firstRow, row, got, exp)
						}
						checked++
					}
					col.arr.Release()
				}
				want.Release()
			}
			if merged != w.split {
				t.Fatalf("%s: pages merged %v, want %v (does the writer still split records across pages?)", name, merged, w.split)
			}
			t.Logf("%s: %d rows checked", name, checked)
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
