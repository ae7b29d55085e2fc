//go:build cgo

package sqlstmt

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Random aggregate statements over generated rows with NULLs, the rows
// split into three "files" whose groups overlap: each file's partial
// states (as a volume computes them: grouping columns then arguments,
// its string keys dictionary-encoded in one file, the record through
// Arrow IPC) merged here give the rows the here path and DuckDB give.
func TestPartialAggregatesOfThreeFilesMergeToTheRowsOfOneAggregation(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(30, 11))
	rec := generated(r, 5000)
	defer rec.Release()
	file := filepath.Join(t.TempDir(), "data.parquet")
	var buf bytes.Buffer
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	if err := pqarrow.WriteTable(tbl, &buf, 1000, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	from := "read_parquet('" + file + "')"
	merged := 0
	for i := range 200 {
		ours, duck := randomStatement(r)
		got, ok, err := runPartials(ctx, ours, rec, []int64{0, 1700, 1701, 5000})
		if err != nil {
			t.Fatalf("%s: %v", ours, err)
		}
		if !ok {
			continue // COUNT(DISTINCT): no partial state
		}
		merged++
		here, err := runLocal(ctx, ours, rec)
		if err != nil {
			t.Fatalf("%s: %v", ours, err)
		}
		if msg := sameRows(got, here); msg != "" {
			t.Fatalf("statement %d: %s\npartials against here: %s\npartials: %v\nhere:     %v", i, ours, msg, got, here)
		}
		want, err := duckRows(db, fmt.Sprintf(duck, from))
		if err != nil {
			t.Fatalf("DuckDB %s: %v", duck, err)
		}
		if msg := sameRows(got, want); msg != "" {
			t.Fatalf("statement %d: %s\npartials against DuckDB: %s\npartials: %v\nduck:     %v", i, ours, msg, got, want)
		}
	}
	if merged < 50 {
		t.Fatalf("only %d statements had partial states", merged)
	}
}

// A partial without its last group (a bug dropping a group's state)
// gives other rows than the here path: the comparison above can fail.
func TestADroppedPartialGroupChangesTheAnswer(t *testing.T) {
	ctx := context.Background()
	rec := generated(rand.New(rand.NewPCG(1, 2)), 2000)
	defer rec.Release()
	q := "SELECT g, COUNT(*), SUM(x) FROM t.data GROUP BY g ORDER BY g NULLS FIRST"
	dropLastGroup = true
	defer func() { dropLastGroup = false }()
	got, _, err := runPartials(ctx, q, rec, []int64{0, 1000, 2000})
	if err != nil {
		t.Fatal(err)
	}
	here, err := runLocal(ctx, q, rec)
	if err != nil {
		t.Fatal(err)
	}
	if sameRows(got, here) == "" {
		t.Fatal("dropping a group's partial state went unnoticed")
	}
}

// Groups past max_groups are RESOURCE_EXHAUSTED, not a wrong answer.
func TestPartialsRefuseMoreGroupsThanTheirBound(t *testing.T) {
	rec := generated(rand.New(rand.NewPCG(3, 4)), 500)
	defer rec.Release()
	p, err := NewPartials(1, []PartialAgg{{Func: Count}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{rec.Schema().Field(5)}, nil), []arrow.Array{rec.Column(5)}, rec.NumRows())
	defer one.Release()
	if err := p.Add(one); err == nil || !bytes.Contains([]byte(err.Error()), []byte("more than 3 groups")) {
		t.Fatalf("err = %v, want more than 3 groups", err)
	}
}

// dropLastGroup makes runPartials drop each file's last group (the
// deliberate bug of TestADroppedPartialGroupChangesTheAnswer).
var dropLastGroup bool

// runPartials answers sql over rec as the volume path does: rec cut at
// cuts into files, each aggregated into partial states, merged here.
func runPartials(ctx context.Context, sql string, rec arrow.RecordBatch, cuts []int64) ([][]any, bool, error) {
	st, err := Parse(sql)
	if err != nil {
		return nil, false, err
	}
	if st, err = canonicalIn(st, diffSchema); err != nil {
		return nil, false, err
	}
	aggs, ok := PartialAggs(st)
	if !ok {
		return nil, false, nil
	}
	columns := ReadColumns(st.Items, st.GroupBy)
	readSchema := arrow.NewSchema(nil, nil)
	{
		var fields []arrow.Field
		for _, c := range columns {
			fields = append(fields, rec.Schema().Field(rec.Schema().FieldIndices(c)[0]))
		}
		readSchema = arrow.NewSchema(fields, nil)
	}
	a := NewAggregator(st, columns)
	if err := a.Init(readSchema); err != nil {
		return nil, false, err
	}
	// the volume's columns: grouping columns, then each aggregate's argument
	var volumeCols []string
	volumeCols = append(volumeCols, st.GroupBy...)
	for _, it := range st.Items {
		if it.Agg != nil && it.Agg.Column != "" {
			volumeCols = append(volumeCols, it.Agg.Column)
		}
	}
	for f := 0; f+1 < len(cuts); f++ {
		var cols []arrow.Array
		var fields []arrow.Field
		for _, c := range volumeCols {
			j := rec.Schema().FieldIndices(c)[0]
			col := array.NewSlice(rec.Column(j), cuts[f], cuts[f+1])
			fd := rec.Schema().Field(j)
			if f == 1 && fd.Type.ID() == arrow.STRING {
				// as a volume reads a dictionary-encoded column chunk
				enc, err := compute.DictionaryEncodeArray(ctx, compute.DictionaryEncodeOptions{}, col)
				if err != nil {
					return nil, false, err
				}
				col.Release()
				col = enc
				fd.Type = enc.DataType()
			}
			cols = append(cols, col)
			fields = append(fields, fd)
		}
		part := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, cuts[f+1]-cuts[f])
		for _, c := range cols {
			c.Release()
		}
		p, err := NewPartials(len(st.GroupBy), aggs, 0)
		if err != nil {
			return nil, false, err
		}
		if err := p.Add(part); err != nil {
			return nil, false, err
		}
		states, err := p.Record(part.Schema(), memory.DefaultAllocator)
		part.Release()
		if err != nil {
			return nil, false, err
		}
		if dropLastGroup && states.NumRows() > 0 {
			cut := states.NewSlice(0, states.NumRows()-1)
			states.Release()
			states = cut
		}
		// through Arrow IPC, as the answer travels
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(states.Schema()))
		if err := w.Write(states); err != nil {
			return nil, false, err
		}
		_ = w.Close()
		states.Release()
		rd, err := ipc.NewReader(&buf)
		if err != nil {
			return nil, false, err
		}
		if !rd.Next() {
			return nil, false, fmt.Errorf("no record: %v", rd.Err())
		}
		err = a.AddPartials(rd.RecordBatch())
		rd.Release()
		if err != nil {
			return nil, false, err
		}
	}
	rows, err := finishRows(ctx, st, a, readSchema)
	return rows, true, err
}

// Groups numbered through the dense table stay right while new values
// grow it batch by batch, and past its bound (the hash map takes over).
func TestGroupsStayRightWhileTheirValuesGrowAcrossBatchesAndPastTheDenseTable(t *testing.T) {
	p, err := NewPartials(2, []PartialAgg{{Func: Count}, {Func: Sum, HasArg: true}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "g0", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "g1", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x1", Type: arrow.PrimitiveTypes.Int64}}, nil)
	type key struct {
		a    string
		null bool
		b    int64
	}
	want := map[key][2]int64{}
	rng := rand.New(rand.NewPCG(5, 6))
	// distinct values per batch: 3×4, then 40×50, then 400×300 (past 65,536 cells)
	for _, card := range [][2]int{{3, 4}, {40, 50}, {400, 300}, {5, 5}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for range 20000 {
			a, g := rng.IntN(card[0]), int64(rng.IntN(card[1]))
			x := int64(rng.IntN(1000))
			k := key{a: fmt.Sprintf("v%d", a), b: g}
			if a == 0 {
				b.Field(0).AppendNull()
				k = key{null: true, b: g}
			} else {
				b.Field(0).(*array.StringBuilder).Append(k.a)
			}
			b.Field(1).(*array.Int64Builder).Append(g)
			b.Field(2).(*array.Int64Builder).Append(x)
			w := want[k]
			want[k] = [2]int64{w[0] + 1, w[1] + x}
		}
		rec := b.NewRecordBatch()
		b.Release()
		if err := p.Add(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	states, err := p.Record(sch, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer states.Release()
	if int(states.NumRows()) != len(want) {
		t.Fatalf("%d groups, want %d", states.NumRows(), len(want))
	}
	g0, g1 := states.Column(0).(*array.String), states.Column(1).(*array.Int64)
	var counts, sums *array.Int64
	for i, f := range states.Schema().Fields() {
		switch f.Name {
		case "n0": // COUNT(*)'s count
			counts, _ = states.Column(i).(*array.Int64)
		case "s1": // SUM(x1)'s int64 sum
			sums, _ = states.Column(i).(*array.Int64)
		}
	}
	if counts == nil || sums == nil {
		t.Fatalf("states have no int64 n0 and s1: %v", states.Schema())
	}
	for r := range int(states.NumRows()) {
		k := key{a: g0.Value(r), null: g0.IsNull(r), b: g1.Value(r)}
		if k.null {
			k.a = ""
		}
		if w := want[k]; counts.Value(r) != w[0] || sums.Value(r) != w[1] {
			t.Fatalf("group %+v: count %d sum %d, want %d %d", k, counts.Value(r), sums.Value(r), w[0], w[1])
		}
	}
}
