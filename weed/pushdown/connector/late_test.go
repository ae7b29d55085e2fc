package connector

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// lateFile writes 2,000 rows of (id, msg) in one row group with small
// pages, with or without page indexes (and dictionaries), and lays it out
// as the connector does.
func lateFile(t *testing.T, pageIndex bool, dict ...bool) (*fileLayout, []byte) {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "msg", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := 0; i < 2000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("message number " + string(rune('a'+i%26)) + "-" + string(rune('a'+i%7)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithPageIndexEnabled(pageIndex),
		parquet.WithDictionaryDefault(len(dict) > 0 && dict[0]), parquet.WithDataPageSize(512), parquet.WithBatchSize(50)))
	return layoutOf(t, "mem", data), data
}

// layoutOf lays out the Parquet file data (named path) as the connector does.
func layoutOf(t *testing.T, path string, data []byte) *fileLayout {
	t.Helper()
	metaLen := int64(binary.LittleEndian.Uint32(data[len(data)-8:]))
	metaOff := int64(len(data)) - 8 - metaLen
	md, err := footer.ParseFooterBytes(data[metaOff:])
	if err != nil {
		t.Fatal(err)
	}
	fl, err := newFileLayout(path, int64(len(data)), md, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fl.chunks, err = footer.Layout(md, metaOff); err != nil {
		t.Fatal(err)
	}
	return fl
}

func sparseOf(data []byte) *sparseFile {
	sf := &sparseFile{path: "mem", size: int64(len(data))}
	sf.add(0, append([]byte(nil), data...))
	return sf
}

// A matching row selects exactly the pages holding it; a missing,
// malformed or unhelpful offset index reads the column whole (ok false):
// it costs bytes, never rows.
func TestLatePagesSelectThePagesOfMatchingRowsAndFallBackToWholeChunks(t *testing.T) {
	fl, data := lateFile(t, true)
	r := &rowGroupRead{rg: 0, numRows: 2000}
	msg := 1 // top-level field of msg
	keep := []int64{7, 1500}
	pages, _, ok := fl.latePages(sparseOf(data), r, msg, rangesOf(keep))
	if !ok || len(pages) != 2 {
		t.Fatalf("latePages = %d pages, ok %v; want the 2 pages holding rows 7 and 1500", len(pages), ok)
	}
	for i, k := range keep {
		if pg := pages[i]; k < pg.firstRow || k >= pg.firstRow+pg.rowCount {
			t.Fatalf("page %d holds rows [%d, %d), not row %d", i, pg.firstRow, pg.firstRow+pg.rowCount, k)
		}
	}

	// most rows match: not smaller by half, read whole
	var many []int64
	for i := int64(0); i < 2000; i += 3 {
		many = append(many, i)
	}
	if _, _, ok := fl.latePages(sparseOf(data), r, msg, rangesOf(many)); ok {
		t.Fatal("a selection of nearly every page was not read whole")
	}

	// a malformed offset index
	loc := fl.chunks[0][fl.leavesOf[msg][0]].OffsetIndex
	broken := append([]byte(nil), data...)
	for i := loc.Offset; i < loc.Offset+int64(loc.Length); i++ {
		broken[i] = 0xff
	}
	if _, _, ok := fl.latePages(sparseOf(broken), r, msg, rangesOf(keep)); ok {
		t.Fatal("a malformed offset index was trusted")
	}

	// an offset index that lies about where its pages are
	lying := append([]byte(nil), data...)
	other := fl.chunks[0][fl.leavesOf[0][0]].OffsetIndex // id's index, pages outside msg's chunk
	copy(lying[loc.Offset:], data[other.Offset:other.Offset+int64(min(other.Length, loc.Length))])
	if _, _, ok := fl.latePages(sparseOf(lying), r, msg, rangesOf(keep)); ok {
		t.Fatal("an offset index inconsistent with its chunk was trusted")
	}

	// no page index at all
	flNone, dataNone := lateFile(t, false)
	if _, _, ok := flNone.latePages(sparseOf(dataNone), r, msg, rangesOf(keep)); ok {
		t.Fatal("a chunk without an offset index was read page by page")
	}
}

// Page-aware decode of a dictionary-encoded string column gives an Arrow
// dictionary (its values once, the rows as indices), as whole-chunk decode
// does, holding the selected pages' rows with their values.
func TestPageDecodeReadsAStringColumnAsADictionaryOfItsPagesRows(t *testing.T) {
	fl, data := lateFile(t, true, true)
	sf := sparseOf(data)
	r := &rowGroupRead{rg: 0, numRows: 2000}
	msg := 1
	leaf := fl.leavesOf[msg][0]
	ch := fl.chunks[0][leaf]
	all, err := footer.PagesOf(fl.offsetIndex(sf, 0, leaf), ch, r.numRows)
	if err != nil || len(all) < 3 || all[0].Offset <= ch.Start {
		t.Fatalf("%d pages (%v), first at %d of a chunk at %d: want several pages after a dictionary", len(all), err, all[0].Offset, ch.Start)
	}
	dict := byteRange{Off: ch.Start, Len: all[0].Offset - ch.Start}
	var pages []pageRange
	for _, pg := range all {
		if (7 >= pg.FirstRow && 7 < pg.EndRow) || (1500 >= pg.FirstRow && 1500 < pg.EndRow) {
			pages = append(pages, pageRangeOf(pg))
		}
	}
	sel := &rowGroupRead{rg: 0, numRows: 2000, pages: map[int][]pageRange{leaf: pages}, dict: map[int]byteRange{leaf: dict}, rows: rangesOf([]int64{7, 1500})}
	col, err := decodePages(context.Background(), fl, sf, sel, msg)
	if err != nil {
		t.Fatal(err)
	}
	defer col.arr.Release()
	d, isDict := col.arr.(*array.Dictionary)
	if !isDict {
		t.Fatalf("decoded as %s, want a dictionary of strings", col.arr.DataType())
	}
	values := d.Dictionary().(*array.String)
	for _, row := range []int64{7, 1500} {
		i := col.index(row)
		if i < 0 {
			t.Fatalf("row %d not decoded", row)
		}
		want := "message number " + string(rune('a'+row%26)) + "-" + string(rune('a'+row%7))
		if got := values.Value(d.GetValueIndex(i)); got != want {
			t.Fatalf("row %d: %q, want %q", row, got, want)
		}
	}
}

// Planned pages that are the whole chunk (every page, the dictionary
// region) decode whole in one pass; any fewer decode page by page.
func TestPlannedPagesCoveringTheWholeChunkDecodeItWhole(t *testing.T) {
	fl, data := lateFile(t, true, true)
	sf := sparseOf(data)
	msg := 1
	leaf := fl.leavesOf[msg][0]
	ch := fl.chunks[0][leaf]
	all, err := footer.PagesOf(fl.offsetIndex(sf, 0, leaf), ch, 2000)
	if err != nil || len(all) < 3 {
		t.Fatalf("%d pages (%v), want several", len(all), err)
	}
	var pages []pageRange
	for _, pg := range all {
		pages = append(pages, pageRangeOf(pg))
	}
	dict := map[int]byteRange{leaf: {Off: ch.Start, Len: all[0].Offset - ch.Start}}
	for _, c := range []struct {
		pages []pageRange
		whole bool
	}{{pages, true}, {pages[1:], false}} {
		r := &rowGroupRead{rg: 0, numRows: 2000, pages: map[int][]pageRange{leaf: c.pages}, dict: dict, rows: plan.All(2000)}
		cols := map[int]*column{}
		if err := decodeTops(context.Background(), fl, sf, r, []int{msg}, true, cols); err != nil {
			t.Fatal(err)
		}
		col := cols[msg]
		if got := col.rows == nil; got != c.whole {
			t.Fatalf("%d of %d pages: decoded whole %v, want %v", len(c.pages), len(pages), got, c.whole)
		}
		d := col.arr.(*array.Dictionary)
		row := int64(1999)
		want := "message number " + string(rune('a'+row%26)) + "-" + string(rune('a'+row%7))
		if got := d.Dictionary().(*array.String).Value(d.GetValueIndex(col.index(row))); got != want {
			t.Fatalf("row %d: %q, want %q", row, got, want)
		}
		col.arr.Release()
	}
}
