//go:build cgo

package sqlstmt

// Aggregates, GROUP BY, HAVING, ORDER BY, LIMIT and OFFSET against DuckDB
// over the same Parquet file: random statements over generated columns
// with NULLs, fed to the aggregation as several records (as the connector
// streams them). The WHERE, pushdown and deletes are the connector's and
// are compared with DuckDB on a real cluster (test/duckdb).

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	_ "github.com/duckdb/duckdb-go/v2"
)

var diffSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "g", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 2, Name: "k", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 3, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 4, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 5, Name: "y", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 6, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 7, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
)

// generated is n rows of diffSchema's columns, about a tenth NULL each.
func generated(r *rand.Rand, n int) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "g", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sch)
	defer b.Release()
	null := func() bool { return r.IntN(10) == 0 }
	for range n {
		if null() {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("g%d", r.IntN(6)))
		}
		if null() {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int32Builder).Append(int32(r.IntN(4) - 1))
		}
		if null() {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
		}
		if null() {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int64Builder).Append(r.Int64N(2_000_001) - 1_000_000)
		}
		if null() {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.Float64Builder).Append(float64(r.IntN(20001)-10000) / 8)
		}
		if null() {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", r.IntN(300)))
		}
		if null() {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + r.Int64N(86_400_000_000*30)))
		}
	}
	return b.NewRecordBatch()
}

// randomStatement is a random aggregate query and DuckDB's form of it
// (FROM the file); every ORDER BY ends with all grouping columns, so the
// order is total.
func randomStatement(r *rand.Rand) (ours, duck string) {
	groupCols := []string{"g", "k", "flag"}
	r.Shuffle(len(groupCols), func(i, j int) { groupCols[i], groupCols[j] = groupCols[j], groupCols[i] })
	groups := groupCols[:r.IntN(3)]
	aggs := []string{"COUNT(*)", "COUNT(x)", "COUNT(DISTINCT s)", "COUNT(DISTINCT y)", "SUM(x)", "SUM(y)", "MIN(x)", "MAX(x)",
		"MIN(y)", "MAX(y)", "AVG(x)", "AVG(y)", "MIN(s)", "MAX(s)", "MIN(ts)", "MAX(ts)", "COUNT(ts)", "SUM(k)", "AVG(k)", "MAX(flag)"}
	var items []string
	for i, g := range groups {
		if r.IntN(3) == 0 {
			items = append(items, fmt.Sprintf("%s AS grp%d", g, i))
		} else {
			items = append(items, g)
		}
	}
	na := 1 + r.IntN(4)
	for i := range na {
		a := aggs[r.IntN(len(aggs))]
		items = append(items, fmt.Sprintf("%s AS a%d", a, i))
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	q := "SELECT " + strings.Join(items, ", ") + " FROM %s"
	if len(groups) > 0 {
		q += " GROUP BY " + strings.Join(groups, ", ")
	}
	switch r.IntN(4) {
	case 0:
		q += fmt.Sprintf(" HAVING COUNT(*) > %d", r.IntN(200))
	case 1:
		q += fmt.Sprintf(" HAVING (SUM(x) < %d OR MAX(y) >= %d) AND MIN(s) IS NOT NULL", r.IntN(2_000_000)-1_000_000, r.IntN(1000))
	case 2:
		if len(groups) > 0 {
			q += fmt.Sprintf(" HAVING %s IS NULL OR COUNT(x) BETWEEN 10 AND %d", groups[0], 100+r.IntN(500))
		}
	}
	var orders []string
	if r.IntN(2) == 0 {
		dir := []string{"", " ASC", " DESC"}[r.IntN(3)]
		nulls := []string{" NULLS FIRST", " NULLS LAST"}[r.IntN(2)]
		orders = append(orders, fmt.Sprintf("a%d%s%s", r.IntN(na), dir, nulls))
	}
	for _, g := range groups {
		dir := []string{" ASC", " DESC"}[r.IntN(2)]
		nulls := []string{" NULLS FIRST", " NULLS LAST"}[r.IntN(2)]
		orders = append(orders, g+dir+nulls)
	}
	if len(orders) > 0 {
		q += " ORDER BY " + strings.Join(orders, ", ")
	}
	if len(groups) > 0 && r.IntN(3) == 0 {
		q += fmt.Sprintf(" LIMIT %d", r.IntN(20))
		if r.IntN(2) == 0 {
			q += fmt.Sprintf(" OFFSET %d", r.IntN(10))
		}
	}
	return fmt.Sprintf(q, "t.data"), q
}

func TestAggregatesEqualDuckDBsOverTheSameParquetFile(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(30, 7))
	rec := generated(r, 6000)
	defer rec.Release()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.parquet")
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
	for i := range 300 {
		ours, duck := randomStatement(r)
		got, err := runLocal(ctx, ours, rec)
		if err != nil {
			t.Fatalf("%s: %v", ours, err)
		}
		want, err := duckRows(db, fmt.Sprintf(duck, from))
		if err != nil {
			t.Fatalf("DuckDB %s: %v", duck, err)
		}
		if msg := sameRows(got, want); msg != "" {
			t.Fatalf("statement %d: %s\n%s\nours:  %v\nduck:  %v", i, ours, msg, got, want)
		}
	}
}

// runLocal answers an aggregate statement over rec, handed on in slices
// of varying length.
func runLocal(ctx context.Context, sql string, rec arrow.RecordBatch) ([][]any, error) {
	st, err := Parse(sql)
	if err != nil {
		return nil, err
	}
	st, err = canonicalIn(st, diffSchema)
	if err != nil {
		return nil, err
	}
	columns := ReadColumns(st.Items, st.GroupBy)
	a := NewAggregator(st, columns)
	idx := make([]int, len(columns))
	for i, c := range columns {
		idx[i] = rec.Schema().FieldIndices(c)[0]
	}
	var readSchema *arrow.Schema
	for start, step := int64(0), int64(1); start < rec.NumRows(); start, step = start+step, step*3+1 {
		end := min(rec.NumRows(), start+step)
		var cols []arrow.Array
		var fields []arrow.Field
		for _, j := range idx {
			cols = append(cols, array.NewSlice(rec.Column(j), start, end))
			fields = append(fields, rec.Schema().Field(j))
		}
		part := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, end-start)
		readSchema = part.Schema()
		for _, c := range cols {
			c.Release()
		}
		err := a.Add(part)
		part.Release()
		if err != nil {
			return nil, err
		}
	}
	return finishRows(ctx, st, a, readSchema)
}

// finishRows is the answer's rows: a's groups finished, OFFSET … LIMIT.
func finishRows(ctx context.Context, st *Statement, a *Aggregator, readSchema *arrow.Schema) ([][]any, error) {
	sorted, err := a.Finish(ctx, readSchema)
	if err != nil {
		return nil, err
	}
	defer sorted.Release()
	out := st.Cut(sorted)
	defer out.Release()
	return recordRows(out), nil
}

func recordRows(rec arrow.RecordBatch) [][]any {
	var rows [][]any
	for i := 0; i < int(rec.NumRows()); i++ {
		row := make([]any, rec.NumCols())
		for j := range row {
			col := rec.Column(j)
			if col.IsNull(i) {
				continue
			}
			switch c := col.(type) {
			case *array.Int64:
				row[j] = c.Value(i)
			case *array.Int32:
				row[j] = int64(c.Value(i))
			case *array.Float64:
				row[j] = c.Value(i)
			case *array.String:
				row[j] = c.Value(i)
			case *array.Boolean:
				row[j] = c.Value(i)
			case *array.Timestamp:
				row[j] = c.Value(i).ToTime(arrow.Microsecond).UTC()
			default:
				row[j] = fmt.Sprintf("unexpected %s", col.DataType())
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func duckRows(db *sql.DB, q string) ([][]any, error) {
	rs, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out [][]any
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range row {
			switch x := v.(type) {
			case int32:
				row[i] = int64(x)
			case int16:
				row[i] = int64(x)
			case int8:
				row[i] = int64(x)
			case uint64:
				row[i] = int64(x)
			case *big.Int:
				row[i] = x.Int64()
			case time.Time:
				row[i] = x.UTC()
			}
		}
		out = append(out, row)
	}
	return out, rs.Err()
}

// sameRows compares answers in order; floats to a relative 1e-9 (sums
// in another order).
func sameRows(got, want [][]any) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("row %d: %d columns, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			g, w := got[i][j], want[i][j]
			if gf, ok := g.(float64); ok {
				if wf, ok := w.(float64); ok && math.Abs(gf-wf) <= 1e-9*math.Max(1, math.Abs(wf)) {
					continue
				}
			}
			if gt, ok := g.(time.Time); ok {
				if wt, ok := w.(time.Time); ok && gt.Equal(wt) {
					continue
				}
			}
			if g != w {
				return fmt.Sprintf("row %d column %d: %v (%T), want %v (%T)", i, j, g, g, w, w)
			}
		}
	}
	return ""
}
