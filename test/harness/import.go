package harness

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
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

// FixtureTableDir is the folder of a fixture table under
// ../shared/testdata/iceberg-tables; the test is skipped when it is absent.
func FixtureTableDir(t testing.TB, rel string) string {
	t.Helper()
	return RequireShared(t, filepath.Join("testdata/iceberg-tables", rel))
}

// FixtureStripPrefix is the prefix the fixture's writers put before the
// table folder's paths: data/persistent/<rel> (see the fixtures' README),
// or "" (let the import infer it from the metadata's location) for the
// tables whose metadata does not use that convention.
func FixtureStripPrefix(dir, rel string) string {
	want := []byte(`"` + FixturePrefix + rel + "/")
	entries, _ := os.ReadDir(filepath.Join(dir, "metadata"))
	for _, e := range entries {
		if !strings.Contains(e.Name(), ".metadata.json") {
			continue
		}
		b, err := ReadMaybeGzip(filepath.Join(dir, "metadata", e.Name()))
		if err == nil && bytes.Contains(b, want) {
			return FixturePrefix + rel
		}
	}
	return ""
}

// RunFixtureImport runs `weed pushdown import` on a fixture table into the
// cluster and returns its output and error; extra flags follow the defaults.
func RunFixtureImport(t testing.TB, c *Cluster, rel, tableName string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	dir := FixtureTableDir(t, rel)
	args := []string{"pushdown", "import", "-dir", dir, "-table", tableName,
		"-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(), "-warehouse", c.Warehouse}
	if p := FixtureStripPrefix(dir, rel); p != "" {
		args = append(args, "-strip-prefix", p)
	}
	args = append(args, extra...)
	return Weed(t, args...)
}

// ImportFixtureTable imports ../shared/testdata/iceberg-tables/<rel> as
// table (ns.name) with `weed pushdown import` and the fixture's
// -strip-prefix, failing the test when the import fails; it returns the
// command's summary. Skipped when ../shared is absent.
func ImportFixtureTable(t testing.TB, c *Cluster, rel, tableName string) string {
	t.Helper()
	out, errOut, err := RunFixtureImport(t, c, rel, tableName)
	if err != nil {
		t.Fatalf("weed pushdown import %s as %s: %v\nstdout:\n%s\nstderr:\n%s", rel, tableName, err, out, errOut)
	}
	return out
}

// ReadMaybeGzip reads a file, gunzipping gzip content.
func ReadMaybeGzip(p string) ([]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return b, nil
}

// FolderIO is a read-only iceberg-go file IO over a local table folder: a
// path under Prefix (as the table's writer spelled it: relative
// "data/persistent/...", file:/..., /abs/...) opens the file below Dir.
// Other absolute local paths open as they are.
type FolderIO struct {
	Prefix string
	Dir    string
}

func trimFileScheme(p string) string {
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		if strings.HasPrefix(rest, "//") {
			rest = rest[2:]
		}
		return rest
	}
	return p
}

func (f FolderIO) local(name string) string {
	n := strings.TrimPrefix(trimFileScheme(name), "./")
	prefix := strings.TrimSuffix(strings.TrimPrefix(trimFileScheme(f.Prefix), "./"), "/")
	if rest, ok := strings.CutPrefix(n, prefix+"/"); ok && prefix != "" {
		return filepath.Join(f.Dir, filepath.FromSlash(rest))
	}
	return n
}

// Open implements icebergio.IO.
func (f FolderIO) Open(name string) (icebergio.File, error) {
	return os.Open(f.local(name))
}

// Remove implements icebergio.IO; the folder is read-only.
func (f FolderIO) Remove(name string) error {
	return errors.New("read-only folder IO")
}

// OpenFolderTable opens the table whose metadata file is metadataFile with
// its files read through FolderIO{prefix, dir}.
func OpenFolderTable(ctx context.Context, metadataFile, prefix, dir string) (*table.Table, error) {
	b, err := ReadMaybeGzip(metadataFile)
	if err != nil {
		return nil, err
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		return nil, err
	}
	fsys := FolderIO{Prefix: prefix, Dir: dir}
	return table.New(table.Identifier{"source", filepath.Base(dir)}, meta, metadataFile,
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil), nil
}

// SnapshotRows scans one snapshot of a table with iceberg-go (deletes
// applied) and returns its rows as sorted strings, one per row.
func SnapshotRows(ctx context.Context, tbl *table.Table, snapshotID int64) ([]string, error) {
	res, err := tbl.Scan(table.WithSnapshotID(snapshotID)).ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return TableRows(res), nil
}

// TableRows renders an Arrow table's rows as sorted strings.
func TableRows(tbl arrow.Table) []string {
	rows := make([]strings.Builder, tbl.NumRows())
	for c := 0; c < int(tbl.NumCols()); c++ {
		name := tbl.Schema().Field(c).Name
		row := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				fmt.Fprintf(&rows[row], "%s=%s;", name, chunk.ValueStr(i))
				row++
			}
		}
	}
	out := make([]string, len(rows))
	for i := range rows {
		out[i] = rows[i].String()
	}
	sort.Strings(out)
	return out
}

// CurrentRows scans the table's current snapshot, failing the test on error.
func CurrentRows(t testing.TB, ctx context.Context, tbl *table.Table) []string {
	t.Helper()
	res, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan %s: %v", tbl.Location(), err)
	}
	defer res.Release()
	return TableRows(res)
}

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

// CopyFolder copies the folder src to dst (which must not exist yet).
func CopyFolder(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}
