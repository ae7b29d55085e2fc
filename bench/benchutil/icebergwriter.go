package benchutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// IcebergGoProjection is the projection of the iceberg-go writer benches.
const IcebergGoProjection = "id,tenant_id,ts,message"

// IcebergGoSchema is the schema of the table CreateIcebergGoTable writes.
func IcebergGoSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tenant_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 4, Name: "message", Type: iceberg.PrimitiveTypes.String},
	)
}

// CreateIcebergGoTable creates ns.name and writes rows through iceberg-go's
// own writer (AppendTable: no page index, no bloom filters; column metrics
// off, 131,072-row row groups, 8 MiB target files): ids 0..rows-1 in a
// seeded shuffled order (so no file or row group statistic could find
// one), a tenant per id, ts in row order and a short message. It returns
// the table as committed.
func CreateIcebergGoTable(t testing.TB, c *harness.Cluster, ns, name string, rows int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{ns}, nil)
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, IcebergGoSchema(), catalog.WithProperties(iceberg.Properties{
		"write.parquet.row-group-limit":  "131072",
		"write.target-file-size-bytes":   strconv.Itoa(8 << 20),
		"write.metadata.metrics.default": "none",
	}))
	if err != nil {
		t.Fatal(err)
	}
	asch, err := table.SchemaToArrowSchema(IcebergGoSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, rows)
	for i := range ids {
		ids[i] = int64(i)
	}
	r := rand.New(rand.NewPCG(5, 8))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	defer b.Release()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("tenant-%03d", id%100))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(start + int64(i)*250_000))
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("request %d served in %d ms", id, id%977))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asch, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := tbl.AppendTable(ctx, at, 1<<16, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// IcebergGoQueries are the point lookup and the 100-id IN of the iceberg-go
// writer benches over rows rows: names, SQL WHERE clauses and the ids each
// matches.
func IcebergGoQueries(rows int64) (names, wheres []string, ids [][]int64) {
	var lits []string
	var in []int64
	for i := int64(1); i <= 100; i++ {
		in = append(in, i*rows/101)
		lits = append(lits, fmt.Sprint(i*rows/101))
	}
	return []string{"point lookup id", "100-id IN"},
		[]string{fmt.Sprintf("id = %d", rows/3), "id IN (" + strings.Join(lits, ", ") + ")"},
		[][]int64{{rows / 3}, in}
}
