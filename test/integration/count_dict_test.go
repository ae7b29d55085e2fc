package integration

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// A COUNT(*) whose predicate reads one dictionary-encoded string column
// counts each row group from the column's dictionary codes, without
// decoding its rows, and counts exactly what a plain read counts: the
// demo's columns, and a column written by iceberg-go with NULLs (IS NULL,
// NOT, a predicate TRUE on NULL). Predicates on two columns, or on a
// column without a dictionary, are decoded and filtered as before.
func TestCountsOnOneDictionaryColumnAreCountedFromItsCodesAndEqualAPlainRead(t *testing.T) {
	t.Parallel() // tables of its own on the shared cluster
	c := sharedCluster(t)
	ctx := context.Background()
	weed := pushdownCLI(t, c)
	weed("demo", "-table", "count_dict.events", "-rows", "12000", "-files", "2", "-rowGroupRows", "2000", "-indexed", "none")

	// iceberg-go's writer: a string column with NULLs, few values
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"count_dict"}, nil)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"count_dict", "nulls"}, sc)
	if err != nil {
		t.Fatal(err)
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 2026))
	values := []string{"alpha", "beta", "gamma", "delta"}
	const rows = 9000
	var written []*string
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if r.IntN(5) == 0 {
			b.Field(1).AppendNull()
			written = append(written, nil)
			continue
		}
		v := values[r.IntN(len(values))]
		b.Field(1).(*array.StringBuilder).Append(v)
		written = append(written, &v)
	}
	rec := b.NewRecordBatch()
	b.Release()
	at := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
	if _, err = tbl.AppendTable(ctx, at, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	at.Release()
	rec.Release()
	oracle := func(keep func(s *string) bool) int64 {
		var n int64
		for _, s := range written {
			if keep(s) {
				n++
			}
		}
		return n
	}
	is := func(v string) func(*string) bool { return func(s *string) bool { return s != nil && *s == v } }

	open := func(o connector.Options) *connector.Connector { return openConnector(t, c, o) }
	plain := open(connector.Options{NoPushdown: true})
	here := open(connector.Options{Force: true, NoFallback: true, FilterAt: connector.FilterHere})
	count := func(conn *connector.Connector, name, where string) (int64, connector.Stats) {
		t.Helper()
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: where, Select: []string{"id"}, CountOnly: true})
		if err != nil {
			t.Fatalf("%s WHERE %s: %v", name, where, err)
		}
		defer res.Release()
		return res.Stats.Rows, res.Stats
	}
	for _, c := range []struct {
		table, where string
		oracle       func(*string) bool // nil: the plain read's count only
		onCodes      bool               // counted from dictionary codes
	}{
		{"count_dict.events", "status = 'error'", nil, true},
		{"count_dict.events", "status IN ('ok', 'warn')", nil, true},
		{"count_dict.events", "NOT (status <> 'timeout')", nil, true},
		{"count_dict.events", "tenant_id LIKE 'tenant-01%'", nil, true},
		{"count_dict.events", "tenant_id >= 'tenant-050' AND tenant_id < 'tenant-060'", nil, true},
		{"count_dict.events", "status = 'nothing'", nil, false}, // pruned by the plan: no row group read
		{"count_dict.events", "status = 'error' AND tenant_id = 'tenant-001'", nil, false},
		{"count_dict.events", "message LIKE '%timeout%'", nil, false},
		{"count_dict.nulls", "s = 'beta'", is("beta"), true},
		{"count_dict.nulls", "s IS NULL", func(s *string) bool { return s == nil }, true},
		{"count_dict.nulls", "s IS NOT NULL", func(s *string) bool { return s != nil }, true},
		{"count_dict.nulls", "NOT (s = 'beta')", func(s *string) bool { return s != nil && *s != "beta" }, true},
		{"count_dict.nulls", "s <> 'gamma' OR s IS NULL", func(s *string) bool { return s == nil || *s != "gamma" }, true},
		{"count_dict.nulls", "s > 'b' AND s < 'e'", func(s *string) bool { return s != nil && *s > "b" && *s < "e" }, true},
	} {
		want, _ := count(plain, c.table, c.where)
		if c.oracle != nil && want != oracle(c.oracle) {
			t.Fatalf("%s WHERE %s: the plain read counts %d, the rows written %d", c.table, c.where, want, oracle(c.oracle))
		}
		got, st := count(here, c.table, c.where)
		if got != want {
			t.Fatalf("%s WHERE %s: counted %d (%d row groups on their codes), a plain read %d", c.table, c.where, got, st.DictionaryCountedRowGroups, want)
		}
		if onCodes := st.DictionaryCountedRowGroups == int64(st.RowGroups) && st.RowGroups > 0; onCodes != c.onCodes {
			t.Fatalf("%s WHERE %s: %d of %d row groups counted on their codes, want all of them: %v", c.table, c.where, st.DictionaryCountedRowGroups, st.RowGroups, c.onCodes)
		}
		t.Logf("%s WHERE %s: %d rows, %d of %d row groups counted on their codes", c.table, c.where, got, st.DictionaryCountedRowGroups, st.RowGroups)
		// SQL's COUNT(*): the same count here and on the volumes, whose
		// AggregateRows counts on the codes too
		for _, site := range []connector.AggregateSite{connector.AggregateHere, connector.AggregateVolume} {
			stmt, err := sqlstmt.Parse("SELECT COUNT(*) FROM " + c.table + " WHERE " + c.where)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			res, err := sqlexec.Run(ctx, here, stmt, sqlexec.Options{AggregateAt: site}, func(rec arrow.RecordBatch) error {
				n = rec.Column(0).(*array.Int64).Value(0)
				return nil
			})
			if err != nil {
				t.Fatalf("COUNT(*) WHERE %s (-aggregateAt %s): %v", c.where, site, err)
			}
			if n != want {
				t.Fatalf("COUNT(*) WHERE %s (-aggregateAt %s): %d, a plain read %d (stats %+v)", c.where, site, n, want, res.Stats)
			}
			if onCodes := res.Stats.DictionaryCountedRowGroups > 0; onCodes != c.onCodes {
				t.Fatalf("COUNT(*) WHERE %s (-aggregateAt %s): %d row groups counted on their codes (answered by %s), want some: %v",
					c.where, site, res.Stats.DictionaryCountedRowGroups, res.Stats.AnsweredBy, c.onCodes)
			}
		}
	}
}

// openConnector is a connector to c with options o (its endpoints set),
// closed when the test ends.
func openConnector(t *testing.T, c *harness.Cluster, o connector.Options) *connector.Connector {
	t.Helper()
	o.Endpoints = c.Endpoints()
	conn, err := connector.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
