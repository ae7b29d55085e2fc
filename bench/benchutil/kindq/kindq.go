// Package kindq holds the side-index kinds benchmark's queries and
// indexes, shared by bench/kindsbench and bench/peer (which keeps to
// few dependencies: nothing here imports the CLI).
package kindq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

// Query is one benchmark query. Keep decides a row client-side for
// iceberg-go's scan where its filter cannot say the predicate (LIKE
// '%…%', array_contains); nil: the scan's own row filter.
type Query struct {
	Name, Where string
	Duck        string // the WHERE clause in DuckDB's dialect (same meaning)
	Select      []string
	Keep        func(rec arrow.RecordBatch, r int) bool
}

// Queries are the side-index kinds issue's three.
var Queries = []Query{
	{"message LIKE '%timeout%'", "message LIKE '%timeout%'", "message LIKE '%timeout%'", []string{"id", "ts", "message"}, func(rec arrow.RecordBatch, r int) bool {
		col := column(rec, "message").(*array.String)
		return col.IsValid(r) && strings.Contains(col.Value(r), "timeout")
	}},
	{"array_contains(tags, 'gpu')", "array_contains(tags, 'gpu')", "list_contains(tags, 'gpu')", []string{"id", "ts", "tags"}, func(rec arrow.RecordBatch, r int) bool {
		l := column(rec, "tags").(*array.List)
		if !l.IsValid(r) {
			return false
		}
		vals := l.ListValues().(*array.String)
		from, to := l.ValueOffsets(r)
		for j := from; j < to; j++ {
			if vals.Value(int(j)) == "gpu" {
				return true
			}
		}
		return false
	}},
	{"tenant_id = 'tenant-042' AND status = 'timeout'", "tenant_id = 'tenant-042' AND status = 'timeout'", "tenant_id = 'tenant-042' AND status = 'timeout'", []string{"id", "ts", "tenant_id", "status"}, nil},
}

// Indexes are the side indexes Queries use.
var Indexes = [][2]string{{"tenant_id", "bitmap"}, {"status", "bitmap"}, {"message", "ngram"}, {"tags", "label_list"}}

// PageIndexColumns get side page indexes, as a user would create them on
// files written without a page index: the projected columns (the tags
// list's pages marked where they start inside a record).
var PageIndexColumns = []string{"id", "ts", "tenant_id", "status", "message", "tags"}

// PageIndexes are the page_index side indexes of PageIndexColumns.
func PageIndexes() [][2]string {
	var out [][2]string
	for _, col := range PageIndexColumns {
		out = append(out, [2]string{col, "page_index"})
	}
	return out
}

// burstWindow is the benchmark demo's burst window: one timeout and one
// gpu burst per 32,768 rows (2.3 hours of the demo's 4 rows a second),
// 128-383 and 192-447 rows long (0.5-1.6 and 0.8-1.9 minutes) — incidents
// and batch jobs, not the default's 16-second blips every 34 minutes.
const burstWindow = 32_768

// Spec is the benchmark's demo table: rows rows in 8 files, -indexed
// none, the bursts of burstWindow and ts written without a dictionary.
func Spec(rows int64) demo.Spec {
	s := demo.DefaultSpec()
	s.Rows, s.Indexed, s.BurstWindow, s.PlainTimestamps = rows, demo.IndexedNone, burstWindow, true
	return s
}

// LayoutNote says how Spec differs from the default demo, for the results.
const LayoutNote = "and two layout choices (`weed pushdown demo -burstWindow 32768 -plainTimestamps`): one timeout and one gpu burst per 32,768 rows " +
	"(≈2.3 hours of the demo's 4 rows a second; bursts of 128-383 and 192-447 consecutive rows, so some row groups hold none) instead of per 8,192, " +
	"and ts written without a dictionary (as parquet-mr writes unique timestamps, and arrow writers at production row-group sizes; " +
	"with the default's 32,768-row groups ts keeps a 93 KB dictionary page per row group that every page read of ts needs)"

func column(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	return rec.Column(idx[0])
}

// Answer is what agreement is checked on: rows and the sum of their ids.
type Answer struct{ Rows, IDSum int64 }

func sumIDs(recs []arrow.RecordBatch, keep func(arrow.RecordBatch, int) bool) Answer {
	var a Answer
	for _, rec := range recs {
		ids := column(rec, "id").(*array.Int64)
		for r := 0; r < int(rec.NumRows()); r++ {
			if keep == nil || keep(rec, r) {
				a.Rows++
				a.IDSum += ids.Value(r)
			}
		}
	}
	return a
}

// IcebergScan is iceberg-go's scan through the S3 gateway: its row filter
// where it can say the predicate, else every row of the projected and
// predicate columns, filtered here.
func IcebergScan(ctx context.Context, t *testing.T, c *harness.Cluster, name string, q Query) (Answer, error) {
	ns, tn, _ := strings.Cut(name, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, tn})
	if err != nil {
		return Answer{}, err
	}
	var filter iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	if q.Keep == nil {
		if filter, err = sqlpred.Parse(q.Where); err != nil {
			return Answer{}, err
		}
	}
	at, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(q.Select...), table.WithCaseSensitive(false)).ToArrowTable(ctx)
	if err != nil {
		return Answer{}, err
	}
	defer at.Release()
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	a := sumIDs(recs, q.Keep)
	for _, r := range recs {
		r.Release()
	}
	return a, tr.Err()
}

// ConnectorQuery runs q through the connector.
func ConnectorQuery(ctx context.Context, conn *connector.Connector, name string, q Query) (Answer, connector.Stats, error) {
	res, err := conn.Query(ctx, connector.Query{Table: name, Where: q.Where, Select: q.Select})
	if err != nil {
		return Answer{}, connector.Stats{}, err
	}
	defer res.Release()
	return sumIDs(res.Records, nil), res.Stats, nil
}

// Weed runs `weed pushdown args…` against the cluster and returns its wall time.
func Weed(t *testing.T, c *harness.Cluster, args ...string) time.Duration {
	t.Helper()
	e := c.Endpoints()
	args = append(append([]string{"pushdown"}, args...), "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
	t0 := time.Now()
	out, errOut, err := harness.Weed(t, args...)
	if err != nil {
		t.Fatalf("weed %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return time.Since(t0)
}

// CreateIndexes records the wish for each (column, kind) through the CLI
// and waits for the builds.
func CreateIndexes(t *testing.T, c *harness.Cluster, name string, idx ...[2]string) {
	for _, x := range idx {
		Weed(t, c, "index", "create", "-table", name, "-column", x[0], "-kind", x[1], "-wait")
	}
}
