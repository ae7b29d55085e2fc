package connector

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// A row group's row positions (RowGroupRef.row_positions) are its planned
// rows as its row ranges would be: an exact row group's candidates are
// exactly those rows less the deleted ones. Positions past the row group,
// bytes that are no bitmap, or positions beside row ranges fail the read
// with an error naming the row group, never rows guessed.
func TestARowGroupsRowPositionsAreItsPlannedRowsLessTheDeletedOnes(t *testing.T) {
	fl, _ := lateFile(t, false)
	c := &Connector{opts: Options{Mode: PageAware}}
	f := &fileRead{pf: &pushdown_pb.PlannedFile{File: "mem"}, fl: fl}
	n := fl.md.RowGroup(0).NumRows()
	rows := plan.RowSet{{Start: 3, End: 4}, {Start: 10, End: 11}, {Start: 17, End: 40}, {Start: n - 1, End: n}}
	positions, err := plan.PositionBytes(rows)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := roaring64.BitmapOf(10, 20).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	ref := &pushdown_pb.RowGroupRef{File: "mem", RowGroup: 0, RowCount: n, RowPositions: positions, RowsExact: true, DeletedPositions: deleted}
	r, err := f.rowGroupRead(ref, c.opts.Mode == PageAware)
	if err != nil {
		t.Fatal(err)
	}
	got := candidates(r)
	var want []int64
	for _, rr := range rows {
		for row := rr.Start; row < rr.End; row++ {
			if row != 10 && row != 20 {
				want = append(want, row)
			}
		}
	}
	if !r.exact || !slices.Equal(got, want) {
		t.Fatalf("candidates %v exact %v, want %v exact", got, r.exact, want)
	}
	rowScratch.Put(got)
	past, _ := plan.PositionBytes(plan.RowSet{{Start: 5, End: 6}, {Start: n, End: n + 1}})
	for name, bad := range map[string]*pushdown_pb.RowGroupRef{
		"past the row group": {File: "mem", RowCount: n, RowPositions: past},
		"not a bitmap":       {File: "mem", RowCount: n, RowPositions: []byte("garbage bytes")},
		"beside row ranges":  {File: "mem", RowCount: n, RowPositions: positions, RowRanges: []*pushdown_pb.RowRange{{Start: 0, End: 5}}},
	} {
		if _, err := f.rowGroupRead(bad, c.opts.Mode == PageAware); err == nil || !strings.Contains(err.Error(), "mem row group 0") {
			t.Fatalf("%s: %v, want an error naming the row group", name, err)
		}
	}
}

// An exact row group whose rows are more than 1/volumeRowsShare of it is
// decoded here, not asked of the volume: rows hitting every page are
// cheaper as pages. (The fetcher is nil: asking would panic.)
func TestDenseExactRowsAreDecodedHereNotAskedOfTheVolume(t *testing.T) {
	c := &Connector{}
	p := &prepared{}
	for _, r := range []*rowGroupRead{
		{numRows: 2000, rows: plan.RowSet{{Start: 0, End: 2000/volumeRowsShare + 1}}, exact: true},
		{numRows: 1 << 20, rows: plan.RowSet{{Start: 0, End: volumeRowsMax + 1}}, exact: true},
	} {
		_, ok, err := c.volumeStage().rows(context.Background(), p, &fileRead{}, r)
		if ok || err != nil {
			t.Fatalf("%d rows of %d: asked of the volume (%v, %v)", r.rows.Rows(), r.numRows, ok, err)
		}
	}
}

// An exact row group whose planned pages of the columns read are at most
// VolumeRowsMinBytes (64 KiB by default) is read here, not asked of the
// volume: the range cache keeps its pages for the next query. (The
// fetcher is nil: asking would panic.) Its bytes are what reading it here
// needs: its pages and dictionary where the plan gave pages (page-aware),
// else its whole chunks; a list column's rows are asked of the volume
// however small its pages.
func TestExactRowsOfSmallPlannedPagesAreReadHereNotAskedOfTheVolume(t *testing.T) {
	fl, _ := lateFile(t, false)
	all := make([]int, len(fl.leavesOf))
	var chunks int64
	for top := range fl.leavesOf {
		all[top] = top
		for _, leaf := range fl.leavesOf[top] {
			chunks += fl.chunks[0][leaf].Length
		}
	}
	if chunks == 0 || chunks > volumeRowsMinBytes {
		t.Fatalf("the file's chunks hold %d bytes: want some, at most %d", chunks, volumeRowsMinBytes)
	}
	f := &fileRead{fl: fl, need: &fileNeed{tops: all}}
	n := fl.md.RowGroup(0).NumRows()
	r := &rowGroupRead{rg: 0, numRows: n, rows: plan.RowSet{{Start: 1, End: 2}}, exact: true}
	if !fl.cheapHere(r, all, true, chunks) || fl.cheapHere(r, all, true, chunks-1) {
		t.Fatalf("without planned pages: not cheap here under a floor of the chunks' %d bytes, or cheap under one less", chunks)
	}
	leaf := fl.leavesOf[0][0]
	r.pages = map[int][]pageRange{leaf: {{byteRange: byteRange{Off: 4, Len: 100}}, {byteRange: byteRange{Off: 200, Len: 50}}}}
	r.dict = map[int]byteRange{leaf: {Off: 0, Len: 4}}
	if !fl.cheapHere(r, []int{0}, true, 154) || fl.cheapHere(r, []int{0}, true, 153) {
		t.Fatalf("two pages and a dictionary of 154 bytes: not cheap here under a floor of 154, or cheap under 153")
	}
	if fl.cheapHere(r, []int{0}, false, 154) != (fl.chunks[0][leaf].Length <= 154) {
		t.Fatalf("row-group mode reads the whole chunk of %d bytes, not the planned pages", fl.chunks[0][leaf].Length)
	}
	// a list column's pages decode whole here: asked of the volume however small
	lf := layoutOf(t, "mem", listFile(t, 300, false, false, nil))
	lr := &rowGroupRead{rg: 0, numRows: lf.md.RowGroup(0).NumRows(), rows: plan.RowSet{{Start: 1, End: 2}}, exact: true}
	tags := lf.leavesOf[1][0]
	if lf.chunks[0][tags].Length > volumeRowsMinBytes || lf.cheapHere(lr, []int{1}, true, volumeRowsMinBytes) || !lf.cheapHere(lr, []int{0}, true, volumeRowsMinBytes) {
		t.Fatalf("a small list column (%d bytes) is cheap here, or its flat id is not", lf.chunks[0][tags].Length)
	}
	r.pages, r.dict = nil, nil
	for _, floor := range []int64{0, chunks} {
		c := &Connector{opts: Options{Mode: PageAware, VolumeRowsMinBytes: floor}}
		if _, ok, err := c.volumeStage().rows(context.Background(), &prepared{}, f, r); ok || err != nil {
			t.Fatalf("VolumeRowsMinBytes %d, %d planned bytes: asked of the volume (%v, %v)", floor, chunks, ok, err)
		}
	}
}
