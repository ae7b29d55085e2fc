package plan

import (
	"reflect"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func TestDeletesTierSkipsWhollyDeletedRowGroupsAndCutsOnlyLongDeletedRuns(t *testing.T) {
	const first, n = 1000, 2000 // row group holds file positions [1000, 3000)
	bm := func(ranges ...[2]uint64) *roaring64.Bitmap {
		b := roaring64.New()
		for _, r := range ranges {
			b.AddRange(r[0], r[1])
		}
		return b
	}
	cases := []struct {
		name    string
		rows    RowSet
		deleted *roaring64.Bitmap
		skip    bool
		want    RowSet
	}{
		{"nothing deleted in the row group", nil, bm([2]uint64{0, 1000}, [2]uint64{3000, 4000}), false, nil},
		{"every row deleted", nil, bm([2]uint64{1000, 3000}), true, nil},
		{"every planned row deleted", RowSet{{100, 200}}, bm([2]uint64{1100, 1200}), true, nil},
		{"a short run stays inside the range", nil, bm([2]uint64{1500, 1500 + MinDeletedRun - 1}), false, nil},
		{"a long run splits the range", nil, bm([2]uint64{1500, 1500 + MinDeletedRun}), false, RowSet{{0, 500}, {500 + MinDeletedRun, n}}},
		{"a long run at the start trims it", nil, bm([2]uint64{1000, 1600}), false, RowSet{{600, n}}},
		{"planned ranges are cut too", RowSet{{0, 100}, {400, 1000}}, bm([2]uint64{1400, 1700}), false, RowSet{{0, 100}, {700, 1000}}},
	}
	for _, c := range cases {
		rgp := RowGroupAccess{Rows: c.rows}
		PruneByDeletes(&rgp, c.deleted, first, n)
		if rgp.Skip != c.skip {
			t.Errorf("%s: skip = %v, want %v", c.name, rgp.Skip, c.skip)
			continue
		}
		if c.skip {
			if rgp.SkipTier != TierDeletes {
				t.Errorf("%s: skipped by %q, want %q", c.name, rgp.SkipTier, TierDeletes)
			}
			continue
		}
		want := c.want
		if want == nil {
			want = c.rows
		}
		if !reflect.DeepEqual(rgp.Rows, want) {
			t.Errorf("%s: rows %v, want %v", c.name, rgp.Rows, want)
		}
	}
}
