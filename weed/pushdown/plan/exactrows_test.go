package plan

import (
	"context"
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

func (s exactSideIndex) Select(_ context.Context, files []*DataFile) ([]*roaring64.Bitmap, SideIndexNotes, error) {
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
