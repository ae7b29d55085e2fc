package tableimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// GeneratedTable is a local Iceberg table written by iceberg-go's Hadoop
// catalog: two appends (ids 1-5 and 6-10) and one merge-on-read delete of
// ids 2 and 7, so the delete touches both data files. Format v2 writes one
// Parquet position-delete file naming both data files; v3 writes one Puffin
// file with a deletion vector per data file.
type GeneratedTable struct {
	Dir          string // the table folder
	Location     string // as recorded in its metadata
	MetadataFile string
	Table        *table.Table
}

var generatedSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

// WriteGeneratedTable writes a GeneratedTable of the given format version
// under parent.
func WriteGeneratedTable(t testing.TB, parent string, formatVersion int) GeneratedTable {
	t.Helper()
	ctx := context.Background()
	cat, err := hadoop.NewCatalog("gen", parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"src", "events"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"src"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, generatedSchema, catalog.WithProperties(iceberg.Properties{
		table.PropertyFormatVersion: string(rune('0' + formatVersion)),
		table.WriteDeleteModeKey:    table.WriteModeMergeOnRead,
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int64{{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}} {
		rec := generatedRows(ids)
		txn := tbl.NewTransaction()
		at := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		if err := txn.AppendTable(ctx, at, 100, nil); err != nil {
			t.Fatal(err)
		}
		at.Release()
		rec.Release()
		if tbl, err = txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	txn := tbl.NewTransaction()
	if err := txn.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), int64(2), int64(7)), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "src", "events")
	return GeneratedTable{Dir: dir, Location: tbl.Location(), MetadataFile: tbl.MetadataLocation(), Table: tbl}
}

func generatedRows(ids []int64) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("name-" + strings.Repeat("x", int(id)))
	}
	return b.NewRecordBatch()
}

// bucketIO reads s3://<bucket>/<key> objects of a Plan from a local folder
// laid out like the bucket.
type bucketIO struct{ root string }

func (b bucketIO) Open(name string) (icebergio.File, error) {
	rest, ok := strings.CutPrefix(name, "s3://")
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return os.Open(filepath.Join(b.root, filepath.FromSlash(rest)))
}

func (b bucketIO) Remove(string) error { return os.ErrPermission }

// materialize lays the plan's objects out under root/<bucket>/<key>, as the
// warehouse would hold them.
func materialize(t testing.TB, plan *Plan, root string) {
	t.Helper()
	for _, o := range plan.Objects {
		dst := filepath.Join(root, plan.Bucket, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.Source)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openPlanned opens the rewritten table from a materialized plan.
func openPlanned(t testing.TB, plan *Plan, root string) *table.Table {
	t.Helper()
	fsys := bucketIO{root: root}
	tbl, err := table.NewFromLocation(context.Background(), table.Identifier{"dst", "events"}, plan.MetadataLocation,
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
	if err != nil {
		t.Fatalf("open the rewritten table at %s: %v", plan.MetadataLocation, err)
	}
	return tbl
}
