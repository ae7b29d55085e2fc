package deletes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The agreement tests build real tables with iceberg-go's own writers on a
// local warehouse (position deletes and DVs from merge-on-read Delete,
// equality deletes from CommitEqualityDeletes), scan them with iceberg-go,
// and check that every data file's rows minus our deleted positions are
// exactly the rows iceberg-go's scan returns.

// memCatalog is the smallest catalog iceberg-go commits through.
type memCatalog struct {
	meta table.Metadata
}

func (c *memCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return table.New(ident, c.meta, "", localFS, c), nil
}

func (c *memCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	for _, r := range reqs {
		if err := r.Validate(c.meta); err != nil {
			return nil, "", err
		}
	}
	meta, err := table.UpdateTableMetadata(c.meta, updates, "")
	if err != nil {
		return nil, "", err
	}
	c.meta = meta
	return meta, "", nil
}

func localFS(context.Context) (iceio.IO, error) { return iceio.LocalFS{}, nil }

func localOpen(ctx context.Context, path string) (Source, error) {
	b, err := os.ReadFile(strings.TrimPrefix(path, "file://"))
	if err != nil {
		return nil, err
	}
	return memSource{data: b}, nil
}

func agreementSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "k", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	)
}

type agreeRow struct {
	id     int64
	region string
	k      int32
	s      *string
	d      *float64
}

func strp(s string) *string   { return &s }
func f64p(f float64) *float64 { return &f }

func agreeRows(from, n int64) []agreeRow {
	ss := []*string{strp("x"), strp("y"), nil, strp("z"), strp("")}
	ds := []*float64{f64p(0), f64p(math.Copysign(0, -1)), f64p(math.NaN()), f64p(1.5), nil, f64p(2)}
	var out []agreeRow
	for id := from; id < from+n; id++ {
		out = append(out, agreeRow{id: id, region: []string{"eu", "us", "ap"}[id%3], k: int32(id % 10), s: ss[id%5], d: ds[id%6]})
	}
	return out
}

// arrowRecord builds a batch of rows with the named columns.
func arrowRecord(t *testing.T, rows []agreeRow, cols ...string) arrow.RecordBatch {
	t.Helper()
	types := map[string]arrow.Field{
		"id":     {Name: "id", Type: arrow.PrimitiveTypes.Int64},
		"region": {Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		"k":      {Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		"s":      {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		"d":      {Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	var fields []arrow.Field
	for _, c := range cols {
		fields = append(fields, types[c])
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer rb.Release()
	for _, r := range rows {
		for i, c := range cols {
			switch c {
			case "id":
				rb.Field(i).(*array.Int64Builder).Append(r.id)
			case "region":
				rb.Field(i).(*array.StringBuilder).Append(r.region)
			case "k":
				rb.Field(i).(*array.Int32Builder).Append(r.k)
			case "s":
				if r.s == nil {
					rb.Field(i).AppendNull()
				} else {
					rb.Field(i).(*array.StringBuilder).Append(*r.s)
				}
			case "d":
				if r.d == nil {
					rb.Field(i).AppendNull()
				} else {
					rb.Field(i).(*array.Float64Builder).Append(*r.d)
				}
			}
		}
	}
	return rb.NewRecordBatch()
}

func records(rec arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
}

func commit(t *testing.T, tbl *table.Table, what string, do func(tx *table.Transaction) error) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := do(tx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	out, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatalf("%s: commit: %v", what, err)
	}
	return out
}

func appendRows(t *testing.T, tbl *table.Table, rows []agreeRow) *table.Table {
	rec := arrowRecord(t, rows, "id", "region", "k", "s", "d")
	defer rec.Release()
	arrTbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer arrTbl.Release()
	return commit(t, tbl, "append", func(tx *table.Transaction) error {
		return tx.AppendTable(context.Background(), arrTbl, int64(len(rows)), nil)
	})
}

func equalityDelete(t *testing.T, tbl *table.Table, partitioned bool, rows []agreeRow, cols ...string) *table.Table {
	ids := map[string]int{"id": 1, "region": 2, "k": 3, "s": 4, "d": 5}
	var eqIDs []int
	for _, c := range cols {
		eqIDs = append(eqIDs, ids[c])
	}
	if partitioned && !slices.Contains(cols, "region") {
		cols = append([]string{"region"}, cols...) // records carry the partition source column
	}
	rec := arrowRecord(t, rows, cols...)
	defer rec.Release()
	return commit(t, tbl, "equality delete", func(tx *table.Transaction) error {
		return tx.CommitEqualityDeletes(context.Background(), eqIDs, records(rec), nil)
	})
}

// scanIDs is iceberg-go's answer: the ids its scan returns.
func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("iceberg-go scan: %v", err)
	}
	defer at.Release()
	var out []int64
	col := at.Column(at.Schema().FieldIndices("id")[0])
	for _, ch := range col.Data().Chunks() {
		out = append(out, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

// fileIDs reads the id column of a data file in row order.
func fileIDs(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(strings.TrimPrefix(path, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	at, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []int64
	for _, ch := range at.Column(at.Schema().FieldIndices("id")[0]).Data().Chunks() {
		out = append(out, ch.(*array.Int64).Int64Values()...)
	}
	return out
}

// ourIDs applies this package to the table's current snapshot: the ids of
// every live data file's rows whose positions are not deleted.
func ourIDs(t *testing.T, tbl *table.Table) (ids []int64, kinds map[string]int) {
	t.Helper()
	ctx := context.Background()
	fs := iceio.LocalFS{}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	var data []DataFile
	var dels []File
	kinds = map[string]int{}
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() == iceberg.EntryContentData {
				data = append(data, DataFileFromIceberg(df, e.SequenceNum()))
				continue
			}
			f, err := FromIceberg(df, e.SequenceNum())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case f.IsDV():
				kinds["dv"]++
			case f.Content == PositionDeletes:
				kinds["position"]++
			default:
				kinds["equality"]++
			}
			dels = append(dels, f)
		}
	}
	specs := map[int]iceberg.PartitionSpec{}
	for _, s := range tbl.Metadata().PartitionSpecs() {
		specs[s.ID()] = s
	}
	ix := NewIndex(dels, specs)
	c := NewComputer(localOpen, newMemStore(), Options{StoreKey: testStoreKey})
	for _, d := range data {
		res, err := c.Deleted(ctx, d, ix.For(d), tbl.Schema(), tbl.Metadata().NameMapping())
		if err != nil {
			t.Fatalf("%s: %v", d.Path, err)
		}
		for pos, id := range fileIDs(t, d.Path) {
			if !res.Deleted.Contains(uint64(pos)) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, kinds
}

func agree(t *testing.T, tbl *table.Table, step string) map[string]int {
	t.Helper()
	want := scanIDs(t, tbl)
	got, kinds := ourIDs(t, tbl)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: we keep %d rows, iceberg-go's scan returns %d (ours−theirs %v, theirs−ours %v)", step, len(got), len(want),
			trunc64(minus(got, want)), trunc64(minus(want, got)))
	}
	return kinds
}

func minus(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}

func trunc64(p []int64) []int64 {
	if len(p) > 20 {
		return p[:20]
	}
	return p
}

func TestOurDeletedPositionsAgreeWithIcebergGosScan(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		for _, partitioned := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%s/partitioned=%v", version, partitioned), func(t *testing.T) {
				dir := t.TempDir()
				spec := iceberg.NewPartitionSpec()
				if partitioned {
					spec = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
				}
				meta, err := table.NewMetadata(agreementSchema(), &spec, table.UnsortedSortOrder, filepath.Join(dir, "t"),
					iceberg.Properties{table.PropertyFormatVersion: version, table.WriteDeleteModeKey: table.WriteModeMergeOnRead})
				if err != nil {
					t.Fatal(err)
				}
				cat := &memCatalog{meta: meta}
				tbl := table.New(table.Identifier{"db", "t"}, meta, "", localFS, cat)

				tbl = appendRows(t, tbl, agreeRows(0, 300))
				tbl = appendRows(t, tbl, agreeRows(300, 300))
				agree(t, tbl, "appends")

				tbl = commit(t, tbl, "delete k = 3", func(tx *table.Transaction) error {
					return tx.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("k"), int32(3)), nil)
				})
				agree(t, tbl, "position deletes")

				// Equality deletes on s (NULL matches NULL) and on (k, d)
				// (NaN and -0.0 keys), region-scoped when partitioned.
				tbl = equalityDelete(t, tbl, partitioned, []agreeRow{{region: "eu", s: strp("x")}, {region: "us", s: nil}}, "s")
				tbl = equalityDelete(t, tbl, partitioned, []agreeRow{{region: "ap", k: 5, s: strp("z")}, {region: "us", k: 7, s: strp("")}}, "k", "s")
				agree(t, tbl, "equality deletes")

				// Rows appended after the equality deletes are not deleted by them.
				tbl = appendRows(t, tbl, agreeRows(600, 300))
				tbl = commit(t, tbl, "delete id < 40 or id in 650..660", func(tx *table.Transaction) error {
					return tx.Delete(context.Background(), iceberg.NewOr(
						iceberg.LessThan(iceberg.Reference("id"), int64(40)),
						iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(650)), iceberg.LessThan(iceberg.Reference("id"), int64(660)))), nil)
				})
				kinds := agree(t, tbl, "later appends and deletes")
				if kinds["equality"] == 0 || kinds["position"]+kinds["dv"] == 0 {
					t.Fatalf("the table lacks a kind of delete file: %v", kinds)
				}
				if version == "3" && kinds["dv"] == 0 {
					t.Fatalf("a v3 table without deletion vectors: %v", kinds)
				}
				t.Logf("delete files: %v", kinds)
			})
		}
	}
}

// readTask scans one hand-built task with iceberg-go's reader and returns
// the ids it keeps. iceberg-go refuses to write or commit equality deletes
// with floating-point keys, but its reader applies them, and a hand-built
// task also reaches files the planner would not pair.
func readTask(t *testing.T, sch *iceberg.Schema, dir string, task table.FileScanTask) []int64 {
	t.Helper()
	meta, err := table.NewMetadata(sch, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, dir, iceberg.Properties{table.PropertyFormatVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.New(table.Identifier{"db", "t"}, meta, "", localFS, nil)
	_, recs, err := tbl.Scan().ReadTasks(context.Background(), []table.FileScanTask{task})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range recs {
		if err != nil {
			t.Fatalf("iceberg-go read: %v", err)
		}
		out = append(out, rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	slices.Sort(out)
	return out
}

// writeLocal writes a Parquet file of (id, k, d) or (k, d) rows and
// describes it as an iceberg-go DataFile of content c.
func writeLocal(t *testing.T, dir, name string, c iceberg.ManifestEntryContent, withID bool, kType arrow.DataType, rows []agreeRow) (iceberg.DataFile, string) {
	t.Helper()
	var fields []arrow.Field
	if withID {
		fields = append(fields, fieldWithID("id", 1, arrow.PrimitiveTypes.Int64, false))
	}
	fields = append(fields, fieldWithID("k", 3, kType, true), fieldWithID("d", 5, arrow.PrimitiveTypes.Float64, true))
	b := writeParquet(t, fields, len(rows), 7, func(rb *array.RecordBuilder) {
		i := 0
		if withID {
			for _, r := range rows {
				rb.Field(0).(*array.Int64Builder).Append(r.id)
			}
			i = 1
		}
		for _, r := range rows {
			switch kb := rb.Field(i).(type) {
			case *array.Int32Builder:
				kb.Append(r.k)
			case *array.Int64Builder:
				kb.Append(int64(r.k))
			}
			if r.d == nil {
				rb.Field(i + 1).AppendNull()
			} else {
				rb.Field(i + 1).(*array.Float64Builder).Append(*r.d)
			}
		}
	})
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, c, path, iceberg.ParquetFile, nil, nil, nil, int64(len(rows)), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if c == iceberg.EntryContentEqDeletes {
		bld = bld.EqualityFieldIDs([]int{3, 5})
	}
	return bld.Build(), path
}

// ourKept applies EqualityDeleted to the data file and returns the ids of
// the rows kept.
func ourKept(t *testing.T, sch *iceberg.Schema, data iceberg.DataFile, del iceberg.DataFile) []int64 {
	t.Helper()
	f, err := FromIceberg(del, 2)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := EqualityDeleted(context.Background(), localOpen, DataFileFromIceberg(data, 1), f, sch, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for pos, id := range fileIDs(t, data.FilePath()) {
		if !bm.Contains(uint64(pos)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func floatRows() []agreeRow {
	var rows []agreeRow
	ds := []*float64{f64p(0), f64p(math.Copysign(0, -1)), f64p(math.NaN()), f64p(1.5), nil}
	for id := int64(0); id < 60; id++ {
		rows = append(rows, agreeRow{id: id, k: int32(id % 4), d: ds[id%5]})
	}
	return rows
}

func TestFloatEqualityKeysAgreeWithIcebergGosReader(t *testing.T) {
	dir := t.TempDir()
	sch := agreementSchema()
	data, _ := writeLocal(t, dir, "data.parquet", iceberg.EntryContentData, true, arrow.PrimitiveTypes.Int32, floatRows())
	// NaN keys written by Go, like the data: the same bits, so iceberg-go's
	// raw-bits comparison and our NaN class agree.
	del, _ := writeLocal(t, dir, "eq.parquet", iceberg.EntryContentEqDeletes, false, arrow.PrimitiveTypes.Int32, []agreeRow{
		{k: 2, d: f64p(math.NaN())}, {k: 1, d: f64p(math.Copysign(0, -1))}, {k: 0, d: f64p(0)}, {k: 0, d: nil}, {k: 3, d: f64p(1.5)},
	})
	want := readTask(t, sch, dir, table.FileScanTask{File: data, EqualityDeleteFiles: []iceberg.DataFile{del}})
	got := ourKept(t, sch, data, del)
	if !slices.Equal(got, want) {
		t.Fatalf("we keep %v, iceberg-go keeps %v", got, want)
	}
	if len(want) == 60 || len(want) == 0 {
		t.Fatalf("degenerate: iceberg-go keeps %d of 60", len(want))
	}
}

// The two places we deliberately differ from iceberg-go v0.7.0, pinned so a
// change on either side is noticed.
func TestWhereWeFollowTheSpecRatherThanIcebergGo(t *testing.T) {
	sch := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "k", Type: iceberg.PrimitiveTypes.Int64}, // promoted from int
		iceberg.NestedField{ID: 4, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	)
	t.Run("NaN keys with another payload match", func(t *testing.T) {
		dir := t.TempDir()
		rows := []agreeRow{{id: 1, k: 1, d: f64p(math.NaN())}, {id: 2, k: 2, d: f64p(1)}}
		data, _ := writeLocal(t, dir, "data.parquet", iceberg.EntryContentData, true, arrow.PrimitiveTypes.Int64, rows)
		del, _ := writeLocal(t, dir, "eq.parquet", iceberg.EntryContentEqDeletes, false, arrow.PrimitiveTypes.Int64,
			[]agreeRow{{k: 1, d: f64p(javaNaN)}}) // Java's NaN bits
		if theirs := readTask(t, sch, dir, table.FileScanTask{File: data, EqualityDeleteFiles: []iceberg.DataFile{del}}); !slices.Equal(theirs, []int64{1, 2}) {
			t.Logf("iceberg-go now matches NaN payloads (keeps %v): the divergence note can go", theirs)
		}
		if ours := ourKept(t, sch, data, del); !slices.Equal(ours, []int64{2}) {
			t.Fatalf("we keep %v, want [2]: every NaN is one value", ours)
		}
	})
	t.Run("int keys written before promotion to long match long deletes", func(t *testing.T) {
		dir := t.TempDir()
		rows := []agreeRow{{id: 1, k: 7, d: f64p(1)}, {id: 2, k: 8, d: f64p(1)}}
		data, _ := writeLocal(t, dir, "data.parquet", iceberg.EntryContentData, true, arrow.PrimitiveTypes.Int32, rows)
		del, _ := writeLocal(t, dir, "eq.parquet", iceberg.EntryContentEqDeletes, false, arrow.PrimitiveTypes.Int64,
			[]agreeRow{{k: 7, d: f64p(1)}})
		if theirs := readTask(t, sch, dir, table.FileScanTask{File: data, EqualityDeleteFiles: []iceberg.DataFile{del}}); !slices.Equal(theirs, []int64{1, 2}) {
			t.Logf("iceberg-go now compares promoted values (keeps %v): the divergence note can go", theirs)
		}
		if ours := ourKept(t, sch, data, del); !slices.Equal(ours, []int64{2}) {
			t.Fatalf("we keep %v, want [2]: 7 (int) equals 7 (long) after promotion", ours)
		}
	})
	t.Run("a key column missing from the data file reads as NULL", func(t *testing.T) {
		dir := t.TempDir()
		fields := []arrow.Field{fieldWithID("id", 1, arrow.PrimitiveTypes.Int64, false), fieldWithID("k", 3, arrow.PrimitiveTypes.Int64, true)}
		b := writeParquet(t, fields, 3, 10, func(rb *array.RecordBuilder) {
			for i := int64(1); i <= 3; i++ {
				rb.Field(0).(*array.Int64Builder).Append(i)
				rb.Field(1).(*array.Int64Builder).Append(i)
			}
		})
		path := filepath.Join(dir, "old.parquet")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 3, int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		data := bld.Build()
		del, _ := writeLocal(t, dir, "eq.parquet", iceberg.EntryContentEqDeletes, false, arrow.PrimitiveTypes.Int64,
			[]agreeRow{{k: 2, d: nil}, {k: 3, d: f64p(0)}})
		meta, err := table.NewMetadata(sch, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, dir, iceberg.Properties{table.PropertyFormatVersion: "2"})
		if err != nil {
			t.Fatal(err)
		}
		_, recs, err := table.New(table.Identifier{"db", "t"}, meta, "", localFS, nil).Scan().ReadTasks(context.Background(),
			[]table.FileScanTask{{File: data, EqualityDeleteFiles: []iceberg.DataFile{del}}})
		var readErr error
		if err == nil {
			for rec, err := range recs {
				if err != nil {
					readErr = err
					break
				}
				rec.Release()
			}
		}
		t.Logf("iceberg-go on a data file lacking d: %v", errors.Join(err, readErr))
		if err == nil && readErr == nil {
			t.Logf("iceberg-go now reads a data file lacking an equality column: the divergence note can go")
		}
		if ours := ourKept(t, sch, data, del); !slices.Equal(ours, []int64{1, 3}) {
			t.Fatalf("we keep %v, want [1 3]: d is NULL in every row, so only (2, NULL) matches", ours)
		}
	})
}
