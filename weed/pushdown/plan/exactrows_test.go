package plan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// exactSideIndex answers every file with bm, exactly or not.
type exactSideIndex struct {
	bm    *roaring64.Bitmap
	exact bool
}

func (s exactSideIndex) Select(_ context.Context, files []*DataFile, _ int64) ([]*roaring64.Bitmap, SideIndexNotes, error) {
	out := make([]*roaring64.Bitmap, len(files))
	ex := make([]bool, len(files))
	for i := range out {
		out[i], ex[i] = s.bm, s.exact
	}
	return out, SideIndexNotes{Exact: ex}, nil
}

// TestRowRangesOfAnExactSideIndexAnswerAreTheMatchingRowsMarkedExact: when
// side indexes answer the whole predicate exactly, a row group's ranges
// are cut to the matching rows (gaps of any length) and marked exact, so
// the reader need not evaluate the predicate; a candidate answer keeps
// gaps shorter than MinSideIndexGap inside its ranges and is not marked.
// A row group every row of which matches is marked too, and that mark is
// not shared with a later query (the plan of a file read whole is
// memoized per projection).
func TestRowRangesOfAnExactSideIndexAnswerAreTheMatchingRowsMarkedExact(t *testing.T) {
	ctx := context.Background()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	data := listPagesFile(t, true)
	mem := memFiles{"s3://t/data/f.parquet": data}
	df := decodeAll(t, data, schema)
	file := DataFile{Path: "s3://t/data/f.parquet", Size: int64(len(data)), RecordCount: df.Rows}
	e, err := predicate.Bind(&predicate.Leaf{FieldID: 2, Op: predicate.OpArrayContains, Raw: []iceberg.Literal{iceberg.StringLiteral("gpu")}}, schema, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// rows every 10 from 100 to 400 (gaps of 9, under MinSideIndexGap) and 3500
	scattered := roaring64.New()
	for p := uint64(100); p < 400; p += 10 {
		scattered.Add(p)
	}
	scattered.Add(3500)
	every := roaring64.New()
	every.AddRange(0, uint64(df.Rows))
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	plan := func(src SideIndexSource) map[int32][2]any {
		resp, _, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{file}, Predicate: e, Options: DefaultOptions(), SideIndex: src})
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32][2]any{}
		for _, rg := range resp.GetRowGroups() {
			rows := roaring64.New()
			for _, r := range rg.GetRowRanges() {
				rows.AddRange(uint64(rg.FirstRow+r.Start), uint64(rg.FirstRow+r.End))
			}
			out[rg.RowGroup] = [2]any{rows, rg.GetRowsExact()}
		}
		return out
	}
	for rg, got := range plan(exactSideIndex{scattered, true}) {
		rows, exact := got[0].(*roaring64.Bitmap), got[1].(bool)
		want := scattered.Clone()
		want.And(func() *roaring64.Bitmap {
			b := roaring64.New()
			b.AddRange(uint64(rg)*3000, uint64(rg+1)*3000)
			return b
		}())
		if !exact || !rows.Equals(want) {
			t.Fatalf("exact answer, row group %d: rows %v exact %v, want %v exact", rg, rows.ToArray(), exact, want.ToArray())
		}
	}
	for rg, got := range plan(exactSideIndex{scattered, false}) {
		rows, exact := got[0].(*roaring64.Bitmap), got[1].(bool)
		if exact || rg == 0 && rows.GetCardinality() != 291 { // [100, 391)
			t.Fatalf("candidate answer, row group %d: %d rows exact %v, want [100, 391) not exact", rg, rows.GetCardinality(), exact)
		}
	}
	all := plan(exactSideIndex{every, true})
	if len(all) != 2 || !all[0][1].(bool) || !all[1][1].(bool) || all[0][0].(*roaring64.Bitmap).GetCardinality() != 0 {
		t.Fatalf("every row matching exactly: %v, want both row groups whole and exact", all)
	}
	for rg, got := range plan(exactSideIndex{every, false}) {
		if got[1].(bool) {
			t.Fatalf("candidate answer after an exact one: row group %d marked exact", rg)
		}
	}
}

// oracleRanges are the ranges of rows (local to a group starting at file
// position first) holding positions, merged across gaps shorter than gap:
// row by row.
func oracleRanges(positions *roaring64.Bitmap, first int64, rows RowSet, gap int64) RowSet {
	var out []RowRange
	for _, r := range rows {
		start, end := int64(-1), int64(-1)
		for row := r.Start; row < r.End; row++ {
			if !positions.Contains(uint64(first + row)) {
				continue
			}
			if start >= 0 && row-end < gap {
				end = row + 1
				continue
			}
			if start >= 0 {
				out = append(out, RowRange{start, end})
			}
			start, end = row, row+1
		}
		if start >= 0 {
			out = append(out, RowRange{start, end})
		}
	}
	return normalize(out)
}

// A side index's answer narrows a row group's planned rows exactly as a
// row-by-row walk of the answer does, over dense, sparse, clustered and
// empty answers, planned rows whole or already narrowed: an exact answer
// with at most MaxExactRanges ranges (and one per exactRangeShare rows) is
// cut to its rows and marked exact (exactly MaxExactRanges stays exact);
// one with more, and any candidate answer, merges across gaps shorter than
// MinSideIndexGap, not marked; a row group with no position left is
// skipped.
func TestASideIndexAnswerNarrowsARowGroupAsARowByRowWalkDoes(t *testing.T) {
	const n, first = 80_000, 100_000
	rng := rand.New(rand.NewPCG(7, 11))
	exactly := roaring64.New() // MaxExactRanges single rows, 3 apart
	for i := 0; i < MaxExactRanges; i++ {
		exactly.Add(uint64(first + 3*i))
	}
	answers := map[string]*roaring64.Bitmap{"exactly MaxExactRanges ranges": exactly, "empty": roaring64.New()}
	for _, density := range []float64{0.2, 0.01, 0.0005} {
		b := roaring64.New()
		for row := int64(0); row < n; row++ {
			if rng.Float64() < density {
				b.Add(uint64(first + row))
			}
		}
		b.Add(uint64(first - 1)) // outside the group: ignored
		answers[fmt.Sprintf("density %.4f", density)] = b
	}
	clustered := roaring64.New()
	clustered.AddRange(first+5_000, first+9_000)
	clustered.AddRange(first+30_000, first+30_010)
	answers["clustered"] = clustered
	for name, positions := range answers {
		for _, planned := range []RowSet{nil, {{0, 1_000}, {20_000, 35_000}}} {
			for _, exact := range []bool{true, false} {
				rgp := &RowGroupAccess{Rows: planned}
				budget := MaxExactRanges
				pruneBySideIndex(rgp, positions, first, n, exact, &budget)
				rows := planned
				if rows == nil {
					rows = All(n)
				}
				want, wantExact := oracleRanges(positions, first, rows, 1), exact
				if !exact || len(want) > min(MaxExactRanges, n/exactRangeShare) {
					want, wantExact = oracleRanges(positions, first, rows, MinSideIndexGap), false
				}
				got := rgp.Rows
				if got == nil {
					got = All(n)
				}
				switch {
				case len(want) == 0:
					if !rgp.Skip {
						t.Errorf("%s, planned %v, exact %v: not skipped, rows %d ranges", name, planned, exact, len(got))
					}
				case rgp.Skip || rgp.RowsExact != wantExact || fmt.Sprint(got) != fmt.Sprint(want):
					t.Errorf("%s, planned %v, exact %v: skip %v, %d ranges (%d rows) exact %v; want %d ranges (%d rows) exact %v",
						name, planned, exact, rgp.Skip, len(got), got.Rows(), rgp.RowsExact, len(want), want.Rows(), wantExact)
				}
			}
		}
	}
}

// A file's row groups share one budget of MaxExactRanges exact ranges: a
// row group that fits in what is left is planned exactly and takes its
// ranges from it; one that does not is planned as candidates merged across
// short gaps, not marked exact, and takes nothing.
func TestAFilesRowGroupsShareOneBudgetOfExactRanges(t *testing.T) {
	const n = 30_000
	positions := roaring64.New() // 3,000 single rows in each of four row groups
	for rg := uint64(0); rg < 4; rg++ {
		for i := uint64(0); i < 3_000; i++ {
			positions.Add(rg*n + 3*i)
		}
	}
	budget := MaxExactRanges
	var exact []bool
	for rg := int64(0); rg < 4; rg++ {
		rgp := &RowGroupAccess{}
		pruneBySideIndex(rgp, positions, rg*n, n, true, &budget)
		exact = append(exact, rgp.RowsExact)
		if want := 3_000; rgp.RowsExact && len(rgp.Rows) != want {
			t.Errorf("row group %d planned exactly in %d ranges, want %d", rg, len(rgp.Rows), want)
		}
		if !rgp.RowsExact && len(rgp.Rows) != 1 {
			t.Errorf("row group %d planned as candidates in %d ranges, want one merged range", rg, len(rgp.Rows))
		}
	}
	if fmt.Sprint(exact) != "[true true false false]" || budget != MaxExactRanges-6_000 {
		t.Fatalf("row groups planned exactly: %v, budget left %d; want [true true false false], %d left", exact, budget, MaxExactRanges-6_000)
	}
}

// An exact answer more scattered than one range per exactRangeShare rows
// of its row group is planned as candidates merged across short gaps, not
// marked exact, and takes nothing from the budget; one just within it is
// planned exactly.
func TestAnAnswerMoreScatteredThanOneRangePerEightRowsIsPlannedAsCandidates(t *testing.T) {
	const n = 10_000
	for _, c := range []struct {
		every     int64
		wantExact bool
	}{{5, false}, {9, true}} {
		positions := roaring64.New()
		for row := int64(0); row < n; row += c.every {
			positions.Add(uint64(row))
		}
		budget := MaxExactRanges
		rgp := &RowGroupAccess{}
		pruneBySideIndex(rgp, positions, 0, n, true, &budget)
		ranges := int((n + c.every - 1) / c.every)
		switch {
		case rgp.RowsExact != c.wantExact:
			t.Errorf("a row in every %d: planned exactly %v, want %v", c.every, rgp.RowsExact, c.wantExact)
		case c.wantExact && (len(rgp.Rows) != ranges || budget != MaxExactRanges-ranges):
			t.Errorf("a row in every %d: %d exact ranges, budget left %d; want %d and %d", c.every, len(rgp.Rows), budget, ranges, MaxExactRanges-ranges)
		case !c.wantExact && (fmt.Sprint(rgp.Rows) != fmt.Sprint(RowSet{{0, (n-1)/c.every*c.every + 1}}) || budget != MaxExactRanges):
			t.Errorf("a row in every %d: candidates %v, budget left %d; want one range up to the last match and the budget untouched", c.every, rgp.Rows, budget)
		}
	}
}
