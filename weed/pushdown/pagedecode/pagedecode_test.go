package pagedecode

import (
	"reflect"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

func TestSelectKeepsThePagesHoldingAWantedRowAndRenumbersTheRowsAmongThem(t *testing.T) {
	// a dictionary region of 10 bytes, then four pages of 100 rows
	pages := []footer.Page{
		{Offset: 110, Length: 50, FirstRow: 0, EndRow: 100},
		{Offset: 160, Length: 50, FirstRow: 100, EndRow: 200},
		{Offset: 210, Length: 50, FirstRow: 200, EndRow: 300},
		{Offset: 260, Length: 50, FirstRow: 300, EndRow: 400},
	}
	s, ok := Select(pages, 100, []int64{5, 6, 7, 250, 399})
	if !ok {
		t.Fatal("not selected")
	}
	if s.Dict != (footer.Page{Offset: 100, Length: 10}) {
		t.Errorf("dictionary region %+v", s.Dict)
	}
	if want := []footer.Page{pages[0], pages[2], pages[3]}; !reflect.DeepEqual(s.Pages, want) {
		t.Errorf("pages %+v, want %+v", s.Pages, want)
	}
	if s.NRows != 300 || s.Bytes != 160 {
		t.Errorf("%d rows, %d bytes; want 300, 160", s.NRows, s.Bytes)
	}
	// rows among the kept pages: 5..7 in the first, 250 is 150, 399 is 299
	if want := (plan.RowSet{{Start: 5, End: 8}, {Start: 150, End: 151}, {Start: 299, End: 300}}); !reflect.DeepEqual(s.Runs, want) {
		t.Errorf("runs %v, want %v", s.Runs, want)
	}
}

func TestSelectRefusesPagesItCannotTrust(t *testing.T) {
	for name, pages := range map[string][]footer.Page{
		"no pages":         nil,
		"a gap in rows":    {{Offset: 0, Length: 5, FirstRow: 0, EndRow: 10}, {Offset: 5, Length: 5, FirstRow: 20, EndRow: 30}},
		"a page continued": {{Offset: 0, Length: 5, FirstRow: 0, EndRow: 10}, {Offset: 5, Length: 5, FirstRow: 10, EndRow: 30, StartsInsideRow: true}},
		"a row past them":  {{Offset: 0, Length: 5, FirstRow: 0, EndRow: 10}},
	} {
		if _, ok := Select(pages, 0, []int64{3, 25}); ok {
			t.Errorf("%s: selected", name)
		}
	}
}
