package connector

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter/colfiltertest"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Over the decoded columns of a file with a struct, fields the file lacks
// (with and without initial-defaults, under a stored struct and under a
// missing one) and page-decoded columns holding only some rows, the
// vectorized residual selects the rows — or fails — exactly as the
// row-wise reading (rowsource_test.go) with predicate.Eval does.
func TestVectorizedResidualOnDecodedColumnsAgreesWithTheRowWiseReading(t *testing.T) {
	inner := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fieldID("3")},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldID("4")})
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID("1")},
		{Name: "s", Type: inner, Nullable: true, Metadata: fieldID("2")},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fieldID("6")},
	}, nil)
	rng := rand.New(rand.NewSource(1))
	const n = 50
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		sb := rb.Field(1).(*array.StructBuilder)
		if rng.Intn(5) == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if rng.Intn(4) == 0 {
				sb.FieldBuilder(0).(*array.Int32Builder).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(rng.Intn(5)))
			}
			sb.FieldBuilder(1).(*array.StringBuilder).Append([]string{"x", "xy", "y"}[rng.Intn(3)])
		}
		if rng.Intn(4) == 0 {
			rb.Field(2).(*array.Float64Builder).AppendNull()
		} else {
			rb.Field(2).(*array.Float64Builder).Append(colfiltertest.FloatSpecials[rng.Intn(len(colfiltertest.FloatSpecials))])
		}
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties())
	fl := layoutOf(t, "s3://w/ns/t/data/f.parquet", data)
	def := func(v value.Value) fieldDefault { return fieldDefault{val: v} }
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 4, Name: "b", Type: iceberg.PrimitiveTypes.String},
			{ID: 5, Name: "c", Type: iceberg.PrimitiveTypes.Int32, InitialDefault: int32(2)},
		}}},
		iceberg.NestedField{ID: 6, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "g", Type: iceberg.PrimitiveTypes.Int64, InitialDefault: int64(3)},
		iceberg.NestedField{ID: 8, Name: "m", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 9, Name: "k", Type: iceberg.PrimitiveTypes.String, InitialDefault: "x"},
		}}},
	)
	fl.defaults = map[int]fieldDefault{5: def(value.OfInt(2)), 7: def(value.OfInt(3)), 9: def(value.OfString("x"))}
	parents := parentIDs(sc)
	whole, err := decodeWhole(context.Background(), fl, sparseOf(data), 0, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	gens := map[int]colfiltertest.Column{}
	for _, id := range []int{1, 3, 4, 5, 6, 7, 9} {
		f, _ := sc.FindFieldByID(id)
		g := colfiltertest.Column{Type: f.Type}
		switch id {
		case 4, 9:
			for _, w := range []string{"", "x", "xy", "y", "z"} {
				g.Lits = append(g.Lits, value.OfString(w))
			}
		case 6:
			for _, f := range colfiltertest.FloatSpecials {
				g.Lits = append(g.Lits, value.OfFloat(f))
			}
		default:
			for v := int64(-1); v <= 5; v++ {
				g.Lits = append(g.Lits, value.OfInt(v))
			}
		}
		gens[id] = g
	}
	ids := []int{1, 3, 4, 5, 6, 7, 9}
	errs := 0
	for seed := int64(0); seed < 1500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		// each column whole, or only some rows (page-decoded)
		cols := map[int]*column{}
		for top, c := range whole {
			if rng.Intn(2) == 0 {
				cols[top] = c
				continue
			}
			var rows []int64
			for r := int64(0); r < n; r++ {
				if rng.Intn(3) != 0 {
					rows = append(rows, r)
				}
			}
			taken, _, err := takeRows(context.Background(), c, rows)
			if err != nil {
				t.Fatal(err)
			}
			cols[top] = &column{arr: taken, rows: rows}
		}
		var rows []int64
		for r := int64(0); r < n; r++ {
			if rng.Intn(3) != 0 {
				rows = append(rows, r)
			}
		}
		// the expression over fields of the file, of a stored struct and missing ones
		var leafCols []colfiltertest.Column
		for _, id := range ids {
			leafCols = append(leafCols, gens[id])
		}
		e := colfiltertest.Expr(rng, leafCols, 3)
		predicate.Walk(e, func(l *predicate.Leaf) { l.FieldID = ids[l.FieldID-1] })
		got, gerr := (&colfilter.Filter{Expr: e}).SelectRows(decodedBatch(fl, 0, cols, sc, parents, rows))
		rs := newRowSource(fl, 0, cols, sc, predicate.FieldIDs(e), fl.defaults, parents)
		var want []int32
		for i, r := range rows {
			if predicate.Eval(e, rs.row(r), predicate.IEEE) == predicate.True {
				want = append(want, int32(i))
			}
			if rs.err != nil {
				break
			}
		}
		if (gerr != nil) != (rs.err != nil) {
			t.Fatalf("seed %d: %s: vectorized error %v, row-wise error %v", seed, e, gerr, rs.err)
		}
		if gerr != nil {
			errs++
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: %s over rows %v\nvectorized %v\nrow-wise   %v", seed, e, rows, got, want)
		}
	}
	if errs == 0 {
		t.Errorf("no case read a row outside the decoded pages: the error path went untested")
	}
}
