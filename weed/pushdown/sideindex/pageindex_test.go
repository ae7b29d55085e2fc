package sideindex

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

func TestPageIndexNeverMissesARowOnFilesWithoutOne(t *testing.T) {
	n := 150
	if testing.Short() {
		n = 30
	}
	var files []*testFile
	for i, f := range generatedFiles(t, 3000) {
		if !layouts[i].pageIndex {
			files = append(files, f)
		}
	}
	st := checkKindAgainstOracle(t, pageIndexKind{}, nil, n, files)
	if st.exact != 0 || st.unknown != 0 || st.pruned == 0 {
		t.Fatalf("page_index: %d exact, %d unknown, %d pruned; want candidates only, every leaf answered, some pages pruned", st.exact, st.unknown, st.pruned)
	}
}

// TestSidePageIndexEqualsTheNativeOneOfTheSameRows writes the same rows
// twice with identical writer properties but the page index switch, and
// compares the side page index built from the file without one with the
// native page index of the other, page by page.
func TestSidePageIndexEqualsTheNativeOneOfTheSameRows(t *testing.T) {
	ctx := context.Background()
	cols := testCols()
	_, s := schemasOf(cols)
	for _, dict := range []bool{false, true} {
		lay := layout{rowGroup: 900, pageBytes: 400, dict: dict}
		plain := loadFile(t, "s3://b/t/data/plain.parquet", writeFile(t, cols, lay, 2500, 11), s)
		lay.pageIndex = true
		native := loadFile(t, "s3://b/t/data/native.parquet", writeFile(t, cols, lay, 2500, 11), s)
		if plain.footer.HasPageIndex() || !native.footer.HasPageIndex() {
			t.Fatal("the two writes do not differ in their page index")
		}
		for _, field := range s.Fields() {
			in := plain.input(t, field.ID, nil)
			_, idx := buildPageIndex(t, field.Name, in)
			for rg := range plain.footer.Chunks {
				side, err := idx.(PageIndexSource).RowGroupIndex(rg)
				if err != nil {
					t.Fatal(err)
				}
				want, err := native.footer.PageIndex(ctx, rg)
				if err != nil {
					t.Fatal(err)
				}
				comparePageIndex(t, field.Name, rg, in.Column, plain, side.Columns[in.Column], want.Columns[in.Column])
			}
		}
	}
}

func comparePageIndex(t *testing.T, name string, rg, col int, plain *testFile, got, want footer.ColumnPageIndex) {
	t.Helper()
	if got.SpansErr != nil || want.SpansErr != nil || got.Err != nil || want.Err != nil {
		t.Fatalf("%s rg %d: page spans: side %v / %v, native %v / %v", name, rg, got.SpansErr, got.Err, want.SpansErr, want.Err)
	}
	if len(got.Pages) != len(want.Pages) {
		t.Fatalf("%s rg %d: side index has %d pages, native %d", name, rg, len(got.Pages), len(want.Pages))
	}
	ch := plain.footer.Chunks[rg][col]
	end := ch.Start + ch.Length
	for i := len(got.Pages) - 1; i >= 0; i-- {
		g, w := got.Pages[i], want.Pages[i]
		if g.FirstRow != w.FirstRow || g.EndRow != w.EndRow {
			t.Fatalf("%s rg %d page %d: side rows [%d, %d), native [%d, %d)", name, rg, i, g.FirstRow, g.EndRow, w.FirstRow, w.EndRow)
		}
		// Offsets are the plain file's own (its headers carry statistics,
		// so they differ from the native file's): pages tile the chunk.
		if g.Offset+g.Length != end {
			t.Fatalf("%s rg %d page %d: ends at %d, the next page (or chunk end) is at %d", name, rg, i, g.Offset+g.Length, end)
		}
		h, err := readPageHeader(plain.data[g.Offset:end])
		if err != nil || int64(h.headerSize)+int64(h.compressedSize) != g.Length || (h.typ != 0 && h.typ != 3) {
			t.Fatalf("%s rg %d page %d: no data page of %d bytes at %d: %v", name, rg, i, g.Length, g.Offset, err)
		}
		end = g.Offset
	}
	if (got.Column == nil) != (want.Column == nil) {
		t.Fatalf("%s rg %d: side column index present %v, native %v", name, rg, got.Column != nil, want.Column != nil)
	}
	if want.Column == nil {
		return
	}
	gc, wc := got.Column, want.Column
	if gc.GetBoundaryOrder() != wc.GetBoundaryOrder() || gc.IsSetNullCounts() != wc.IsSetNullCounts() {
		t.Fatalf("%s rg %d: boundary order %v / null counts %v, native %v / %v", name, rg, gc.GetBoundaryOrder(), gc.IsSetNullCounts(), wc.GetBoundaryOrder(), wc.IsSetNullCounts())
	}
	for i := range want.Pages {
		if gc.GetNullPages()[i] != wc.GetNullPages()[i] || !bytes.Equal(gc.GetMinValues()[i], wc.GetMinValues()[i]) ||
			!bytes.Equal(gc.GetMaxValues()[i], wc.GetMaxValues()[i]) || (wc.IsSetNullCounts() && gc.GetNullCounts()[i] != wc.GetNullCounts()[i]) {
			t.Fatalf("%s rg %d page %d: side column index entry differs from the native one", name, rg, i)
		}
	}
}

// The page index of a list column lists the pages the writer wrote, each
// with the rows starting in it, and marks as continuing a row exactly the
// pages whose first repetition level is not 0 (arrow-go's V1 writer
// without a page index cuts pages inside records). A payload of a
// repeated column marked neither way, or whose continued pages are out of
// place, does not open.
func TestListPageIndexesListTheWritersPagesAndMarkThoseContinuingARow(t *testing.T) {
	ctx := context.Background()
	cols := listCols()
	_, s := schemasOf(cols)
	f := loadFile(t, "s3://b/t/data/lists.parquet", writeFile(t, cols, layout{rowGroup: 900, pageBytes: 200}, 2500, 3), s)
	rdr, err := file.NewParquetReader(bytes.NewReader(f.data))
	if err != nil {
		t.Fatal(err)
	}
	continued := 0
	for _, field := range s.Fields() {
		in := f.input(t, field.ID, nil)
		if !(pageIndexKind{}).Supports(in.Type) {
			t.Fatalf("page_index does not support %s", in.Type)
		}
		payload, idx := buildPageIndex(t, field.Name, in)
		for rg := range f.footer.Chunks {
			rgi, err := idx.(PageIndexSource).RowGroupIndex(rg)
			if err != nil {
				t.Fatal(err)
			}
			cpi := rgi.Columns[in.Column]
			if cpi.SpansErr != nil || len(cpi.Pages) == 0 || cpi.Pages[len(cpi.Pages)-1].EndRow != f.footer.Meta.RowGroup(rg).NumRows() {
				t.Fatalf("%s rg %d: pages %v (%v) do not hold the row group's rows", field.Name, rg, cpi.Pages, cpi.SpansErr)
			}
			ch := f.footer.Chunks[rg][in.Column]
			written, err := chunkPages(rg, ch, f.data[ch.Start:ch.Start+ch.Length], true)
			if err != nil {
				t.Fatal(err)
			}
			if len(cpi.Pages) != len(written) {
				t.Fatalf("%s rg %d: %d pages listed, the writer wrote %d", field.Name, rg, len(cpi.Pages), len(written))
			}
			levels, err := repetitionLevels(rdr, rg, in.Column, ch.NumValues)
			if err != nil {
				t.Fatal(err)
			}
			at, rows := int64(0), int64(0)
			for i, pg := range cpi.Pages {
				lv := levels[at : at+written[i].values]
				if pg.StartsInsideRow != (lv[0] != 0) || pg.FirstRow != rows {
					t.Fatalf("%s rg %d page %d: starts inside a row %v from row %d; its first level is %d, %d rows start before it", field.Name, rg, i, pg.StartsInsideRow, pg.FirstRow, lv[0], rows)
				}
				for _, l := range lv {
					if l == 0 {
						rows++
					}
				}
				if pg.EndRow != rows {
					t.Fatalf("%s rg %d page %d: rows end at %d, %d start through it", field.Name, rg, i, pg.EndRow, rows)
				}
				if pg.StartsInsideRow {
					continued++
				}
				at += written[i].values
			}
		}
		h, props, blobs, err := readPuffin(payload, withKind(wantOf(in, "page_index"), pageIndexKind{}))
		if err != nil {
			t.Fatal(err)
		}
		unmarked := maps.Clone(props)
		delete(unmarked, pageListRowsProp)
		misplaced := slices.Clone(blobs)
		for i := range misplaced {
			if misplaced[i].typ == offsetIndexBlob {
				misplaced[i].props = maps.Clone(misplaced[i].props)
				misplaced[i].props[continuedPagesProp] = "0"
				break
			}
		}
		for name, c := range map[string]struct {
			props map[string]string
			blobs []puffinBlob
		}{"not marked": {unmarked, blobs}, "page 0 continued": {props, misplaced}} {
			bad, err := writePuffin(h, c.props, c.blobs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (pageIndexKind{}).Open(ctx, bad, wantOf(in, "page_index")); err == nil {
				t.Fatalf("%s: a list column's page index (%s) opened", field.Name, name)
			}
		}
	}
	if continued == 0 {
		t.Fatal("no page continues a row: the writer no longer starts pages inside records, the test checks nothing")
	}
}

// buildPageIndex builds and opens the page_index of in.
func buildPageIndex(t *testing.T, name string, in Input) ([]byte, Index) {
	t.Helper()
	ctx := context.Background()
	payload, err := pageIndexKind{}.Build(ctx, in)
	if err != nil {
		t.Fatalf("%s: build: %v", name, err)
	}
	idx, err := pageIndexKind{}.Open(ctx, payload, wantOf(in, "page_index"))
	if err != nil {
		t.Fatalf("%s: open: %v", name, err)
	}
	return payload, idx
}
