package plan

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Row positions read back as the row set written: single rows, runs long
// and short, rows on both sides of a 65,536 boundary, the empty set.
func TestRowPositionsReadBackAsTheRowSetWritten(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := []RowSet{{}, {{0, 1}}, {{5, 6}, {8, 200}, {65535, 65537}, {70000, 70001}}, All(100_000)}
	for i := 0; i < 50; i++ {
		var rs []RowRange
		for at := int64(rng.IntN(50)); at < 140_000; at += 1 + int64(rng.IntN(300)) {
			n := int64(1)
			if rng.IntN(10) == 0 {
				n = 1 + int64(rng.IntN(500))
			}
			rs = append(rs, RowRange{at, at + n})
			at += n
		}
		sets = append(sets, normalize(rs))
	}
	for i, s := range sets {
		b, err := PositionBytes(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := RowSetOfPositions(b, 150_000)
		if err != nil || !slices.Equal(got, s) {
			t.Fatalf("set %d (%d ranges): read back %d ranges, %v", i, len(s), len(got), err)
		}
	}
}

// Positions past the row group's rows or bytes that are no bitmap are an
// error naming the problem.
func TestRowPositionsPastTheRowGroupOrNotABitmapAreRefused(t *testing.T) {
	b, err := PositionBytes(RowSet{{10, 20}, {99, 100}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RowSetOfPositions(b, 99); err == nil || !strings.Contains(err.Error(), "past the row group's 99 rows") {
		t.Fatalf("a position past the rows: %v", err)
	}
	if _, err := RowSetOfPositions([]byte("not a bitmap at all"), 1000); err == nil {
		t.Fatal("garbage read as row positions")
	}
}

// A client that accepts row positions gets each row group's planned rows
// as a bitmap where the ranges are many (MinPositionRanges or more) and as
// ranges otherwise: the same rows, the same exactness, plan after plan;
// a client that does not gets ranges only. Deleted positions go as
// before, beside either.
func TestAClientAcceptingRowPositionsGetsTheSameRowsAsABitmapWhereRangesAreMany(t *testing.T) {
	ctx := context.Background()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String}})
	data := listPagesFile(t, true) // 6,000 rows, row groups of 3,000
	mem := memFiles{"s3://t/data/f.parquet": data}
	df := decodeAll(t, data, schema)
	file := DataFile{Path: "s3://t/data/f.parquet", Size: int64(len(data)), RecordCount: df.Rows, HasDeletes: true}
	e, err := predicate.Bind(&predicate.Leaf{FieldID: 2, Op: predicate.OpArrayContains, Raw: []iceberg.Literal{iceberg.StringLiteral("gpu")}}, schema, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// row group 0: ~3% of its rows, scattered; row group 1: one row
	rng := rand.New(rand.NewPCG(3, 4))
	scattered := roaring64.New()
	for p := uint64(0); p < 3000; p++ {
		if rng.IntN(33) == 0 {
			scattered.Add(p)
		}
	}
	scattered.Add(3500)
	deleted := roaring64.BitmapOf(scattered.Minimum(), 3500)
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	plan := func(exact, positions bool) map[int32]*pushdown_pb.RowGroupRef {
		resp, _, err := p.Plan(ctx, Request{Table: Table{Schema: schema}, Files: []DataFile{file}, Predicate: e, Options: DefaultOptions(),
			SideIndex: exactSideIndex{scattered, exact}, Deletes: fixedDeletes{deleted}, RowPositions: positions})
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]*pushdown_pb.RowGroupRef{}
		for _, rg := range resp.GetRowGroups() {
			out[rg.RowGroup] = rg
		}
		return out
	}
	rowsOf := func(rg *pushdown_pb.RowGroupRef) *roaring64.Bitmap {
		t.Helper()
		rows := roaring64.New()
		set := RowSet{}
		for _, r := range rg.GetRowRanges() {
			set = append(set, RowRange{r.Start, r.End})
		}
		if len(rg.GetRowPositions()) > 0 {
			if len(set) > 0 {
				t.Fatalf("row group %d has both row ranges and row positions", rg.RowGroup)
			}
			var err error
			if set, err = RowSetOfPositions(rg.GetRowPositions(), rg.RowCount); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range set {
			rows.AddRange(uint64(rg.FirstRow+r.Start), uint64(rg.FirstRow+r.End))
		}
		return rows
	}
	for _, exact := range []bool{true, false} {
		ranges := plan(exact, false)
		for _, rg := range ranges {
			if len(rg.GetRowPositions()) > 0 {
				t.Fatalf("exact %v: row positions sent to a client that did not ask", exact)
			}
		}
		for round := 0; round < 3; round++ { // buffers reused by the next plans
			got := plan(exact, true)
			if len(got) != len(ranges) {
				t.Fatalf("exact %v: %d row groups with positions, %d without", exact, len(got), len(ranges))
			}
			for g, want := range ranges {
				rg := got[g]
				if !rowsOf(rg).Equals(rowsOf(want)) || rg.RowsExact != want.RowsExact || string(rg.DeletedPositions) != string(want.DeletedPositions) || len(rg.DeletedPositions) == 0 {
					t.Fatalf("exact %v round %d row group %d: positions plan %d rows exact %v, ranges plan %d rows exact %v (deletes %d, %d bytes)",
						exact, round, g, rowsOf(rg).GetCardinality(), rg.RowsExact, rowsOf(want).GetCardinality(), want.RowsExact, len(rg.DeletedPositions), len(want.DeletedPositions))
				}
				many := len(want.GetRowRanges()) >= MinPositionRanges
				if many != (len(rg.GetRowPositions()) > 0) {
					t.Fatalf("exact %v row group %d: %d row ranges went as positions: %v", exact, g, len(want.GetRowRanges()), !many)
				}
			}
			if exact {
				want := scattered.Clone()
				want.RemoveRange(3000, 6000)
				want.AndNot(deleted) // the deletes tier cuts deleted rows out of the ranges
				if rg := got[0]; !rg.RowsExact || !rowsOf(rg).Equals(want) || len(rg.GetRowPositions()) == 0 {
					t.Fatalf("round %d: row group 0 is %d rows exact %v, want the %d scattered rows not deleted, exact, as positions", round, rowsOf(rg).GetCardinality(), rg.RowsExact, want.GetCardinality())
				}
			}
		}
	}
}
