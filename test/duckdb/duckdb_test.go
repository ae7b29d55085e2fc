//go:build cgo

// Package duckdb checks the connector against DuckDB (duckdb-go, embedded;
// it needs cgo) reading the same Parquet files: rows and their order.
//
//	weed mini -pushdown ─▶ demo table ─▶ its data files, downloaded in the
//	   scan's file order ─▶ DuckDB read_parquet([...]) … LIMIT n OFFSET m
//	                     └▶ the connector, every mode, LIMIT n OFFSET m ─▶ equal ids
package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// LIMIT n OFFSET m gives the rows DuckDB gives over the table's files read
// in the scan's order (one thread: DuckDB keeps the files' row order), in
// every mode of the connector.
func TestOffsetReturnsTheRowsDuckDBReturnsOverTheSameFiles(t *testing.T) {
	c := harness.StartMini(t, harness.MiniOptions{})
	ctx := context.Background()
	spec := demo.DefaultSpec()
	spec.Rows, spec.Files, spec.RowGroupRows, spec.Indexed = 30_000, 3, 5_000, demo.IndexedHalf
	if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "duck_it.events", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	files := harness.DownloadTable(t, c, "duck_it.events")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("SET threads TO 1"); err != nil {
		t.Fatal(err)
	}
	from := "read_parquet(['" + strings.Join(files, "', '") + "'])"

	modes := map[string]connector.Options{
		"default":     {},
		"no-pushdown": {NoPushdown: true},
		"page-aware":  {Mode: connector.PageAware, Force: true, NoFallback: true},
		"row-group":   {Mode: connector.RowGroup, Force: true, NoFallback: true},
	}
	conns := map[string]*connector.Connector{}
	for name, o := range modes {
		o.Endpoints = c.Endpoints()
		conn, err := connector.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[name] = conn
	}
	checked := 0
	for _, where := range []string{"", "tenant_id = 'tenant-007'", "status = 'error' AND id < 20000", "tenant_id IN ('tenant-001', 'tenant-050') OR id < 100"} {
		for _, lo := range [][2]int64{{5, 0}, {5, 10}, {20, 333}, {3, 9990}, {0, 100}} {
			limit, offset := lo[0], lo[1]
			q := "SELECT id FROM " + from
			if where != "" {
				q += " WHERE " + where
			}
			if limit > 0 {
				q += fmt.Sprintf(" LIMIT %d", limit)
			}
			q += fmt.Sprintf(" OFFSET %d", offset)
			want := duckIDs(t, db, q)
			for name, conn := range conns {
				res, err := conn.Query(ctx, connector.Query{Table: "duck_it.events", Where: where, Select: []string{"id"}, Limit: limit, Offset: offset})
				if err != nil {
					t.Fatalf("%s: %s: %v", name, q, err)
				}
				got := ids(res)
				res.Release()
				if !slices.Equal(got, want) {
					t.Errorf("%s: WHERE %q LIMIT %d OFFSET %d: %d ids %v…, DuckDB %d ids %v…", name, where, limit, offset, len(got), head(got), len(want), head(want))
				}
				checked++
			}
		}
	}
	t.Logf("%d answers agree with DuckDB", checked)
}

func duckIDs(t *testing.T, db *sql.DB, q string) []int64 {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("DuckDB: %s: %v", q, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(res *connector.Result) []int64 {
	var out []int64
	for _, rec := range res.Records {
		col := rec.Column(0).(*array.Int64)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.Value(i))
		}
	}
	return out
}

func head(v []int64) []int64 { return v[:min(len(v), 6)] }
