//go:build cgo

package sqlexec

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
	if st, err = st.canonical(diffSchema); err != nil {
		return nil, false, err
	}
	aggs, ok := PartialAggs(st)
	if !ok {
		return nil, false, nil
	}
	columns := readColumns(st.Items, st.GroupBy)
	readSchema := arrow.NewSchema(nil, nil)
	{
		var fields []arrow.Field
		for _, c := range columns {
			fields = append(fields, rec.Schema().Field(rec.Schema().FieldIndices(c)[0]))
		}
		readSchema = arrow.NewSchema(fields, nil)
	}
	a := newAggregator(st, columns)
	if err := a.init(readSchema); err != nil {
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
		err = a.addPartials(rd.RecordBatch())
		rd.Release()
		if err != nil {
			return nil, false, err
		}
	}
	var rows [][]any
	_, err = finishAggregate(ctx, st, a, readSchema, &Result{}, func(out arrow.RecordBatch) error {
		rows = append(rows, recordRows(out)...)
		return nil
	})
	return rows, true, err
}
