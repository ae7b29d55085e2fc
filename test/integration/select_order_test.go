package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// `weed pushdown query` prints columns in the order the SELECT names them
// — `*` in schema order — in every read mode (page-aware, row-group,
// plain) and every format (table, csv, json). The expected output is
// spelled out.
func TestQueryPrintsColumnsInSelectOrderInEveryModeAndFormat(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	c := sharedCluster(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
	appendedTable(t, c, table.Identifier{"order_it", "events"}, sc, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
		b.Field(1).(*array.StringBuilder).AppendValues([]string{"open", "closed", "open"}, nil)
		b.Field(2).(*array.Float64Builder).AppendValues([]float64{1.5, 2.25, 3}, nil)
	})

	e := c.Endpoints()
	modes := map[string][]string{
		"page-aware":  {"-force", "-no-fallback"},
		"row-group":   {"-mode", "rowgroup", "-force", "-no-fallback"},
		"no-pushdown": {"-no-pushdown"},
	}
	for _, q := range []struct {
		sql  string
		want map[string]string // format → stdout
	}{
		{"SELECT status, id FROM order_it.events WHERE id <= 2", map[string]string{
			"csv":   "status,id\nopen,1\nclosed,2\n",
			"json":  `{"status":"open","id":1}` + "\n" + `{"status":"closed","id":2}` + "\n",
			"table": "status  id\nopen    1\nclosed  2\n(2 rows)\n",
		}},
		{"SELECT amount, id, status FROM order_it.events WHERE status = 'open'", map[string]string{
			"csv":   "amount,id,status\n1.5,1,open\n3,3,open\n",
			"json":  `{"amount":1.5,"id":1,"status":"open"}` + "\n" + `{"amount":3,"id":3,"status":"open"}` + "\n",
			"table": "amount  id  status\n1.5     1   open\n3       3   open\n(2 rows)\n",
		}},
		{"SELECT id, status, id FROM order_it.events WHERE id = 3", map[string]string{
			"csv":   "id,status,id\n3,open,3\n",
			"json":  `{"id":3,"status":"open","id":3}` + "\n",
			"table": "id  status  id\n3   open    3\n(1 rows)\n",
		}},
		{"SELECT * FROM order_it.events WHERE id = 2", map[string]string{
			"csv":   "id,status,amount\n2,closed,2.25\n",
			"json":  `{"id":2,"status":"closed","amount":2.25}` + "\n",
			"table": "id  status  amount\n2   closed  2.25\n(1 rows)\n",
		}},
	} {
		for mode, flags := range modes {
			for format, want := range q.want {
				args := append([]string{"pushdown", "query", "-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3,
					"-sql", q.sql, "-format", format}, flags...)
				out, errOut, err := harness.Weed(t, args...)
				if err != nil {
					t.Errorf("%s -format %s %q: %v\n%s", mode, format, q.sql, err, errOut)
					continue
				}
				if out != want {
					t.Errorf("%s -format %s %q:\n got\n%s want\n%s", mode, format, q.sql, out, want)
				}
			}
		}
	}
}

// appendedTable creates table id (and its namespace) with schema sc
// through the cluster's Iceberg REST catalog and appends one file of the
// rows fill builds (iceberg-go's writer).
func appendedTable(t *testing.T, c *harness.Cluster, id table.Identifier, sc *iceberg.Schema, fill func(b *array.RecordBuilder)) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, id[:len(id)-1], nil)
	tbl, err := cat.CreateTable(ctx, id, sc)
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	fill(b)
	rec := b.NewRecordBatch()
	b.Release()
	data := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	rec.Release()
	defer data.Release()
	if tbl, err = tbl.AppendTable(ctx, data, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}
