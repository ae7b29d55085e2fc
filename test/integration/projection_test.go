package integration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// idPartFile is a data file of the identity-partitioned table: its rows
// (id, amount) and its partition (region, shard; nil shard: NULL). With
// stored, the file also holds the region and shard columns.
type idPartFile struct {
	ids     []int64
	amounts []float64
	region  string
	shard   *int32
	stored  bool
}

// writeIDPartFile writes f as Parquet, with field ids (1 id, 2 region,
// 3 shard, 4 amount) or without any, leaving region and shard out unless
// f.stored.
func writeIDPartFile(t *testing.T, f idPartFile, withIDs bool) []byte {
	t.Helper()
	fid := func(id string) arrow.Metadata {
		if !withIDs {
			return arrow.Metadata{}
		}
		return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id})
	}
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid("1")}}
	if f.stored {
		fields = append(fields, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Metadata: fid("2")},
			arrow.Field{Name: "shard", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid("3")})
	}
	fields = append(fields, arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fid("4")})
	as := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i, id := range f.ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if f.stored {
			b.Field(1).(*array.StringBuilder).Append(f.region)
			if f.shard == nil {
				b.Field(2).AppendNull()
			} else {
				b.Field(2).(*array.Int32Builder).Append(*f.shard)
			}
		}
		b.Field(as.NumFields() - 1).(*array.Float64Builder).Append(f.amounts[i])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithPageIndexEnabled(true)))
}

// renderOrdered renders result rows as "name=value|..." in the result's
// column order, sorted.
func renderOrdered(res *connector.Result) []string {
	var out []string
	for _, rec := range res.Records {
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				v := "NULL"
				if !rec.Column(c).IsNull(r) {
					v = rec.Column(c).ValueStr(r)
				}
				parts = append(parts, rec.Schema().Field(c).Name+"="+v)
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	slices.Sort(out)
	return out
}

// A table identity-partitioned on region (required) and shard, whose data
// files — like DuckDB's or a Hive migration's — do not store those
// columns: every read path (page-aware, row-group, plain) reads them from
// the manifest entries' partition values, predicates on them see the same
// values, and a NULL partition value reads NULL. One file does store the
// columns and is read as stored. The expected rows are spelled out.
func TestIdentityPartitionColumnsMissingFromDataFilesReadTheirPartitionValuesInEveryMode(t *testing.T) {
	c := sharedCluster(t)
	identityPartitioned(t, c, "sales", nil, true)
	checkIdentityPartitionReads(t, c, "idpart.sales")
}

// A Hive migration's table: data files without field ids, read through
// the table's name mapping, without the identity partition columns but
// one file: every read path reads the partition values as above.
func TestIdentityPartitionColumnsOfFilesWithoutFieldIDsReadTheirPartitionValuesInEveryMode(t *testing.T) {
	c := sharedCluster(t)
	mapping := `[{"field-id":1,"names":["id"]},{"field-id":2,"names":["region"]},{"field-id":3,"names":["shard"]},{"field-id":4,"names":["amount"]}]`
	identityPartitioned(t, c, "hive", iceberg.Properties{"schema.name-mapping.default": mapping}, false)
	checkIdentityPartitionReads(t, c, "idpart.hive")
}

// identityPartitioned creates idpart.<name>, identity-partitioned on region
// and shard, and adds four Parquet files written here (with or without
// field ids): three without the partition columns, one with them.
func identityPartitioned(t *testing.T, c *harness.Cluster, name string, props iceberg.Properties, withIDs bool) {
	t.Helper()
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"idpart"}, nil)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "shard", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "shard", Transform: iceberg.IdentityTransform{}},
	)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"idpart", name}, sc, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	one, two, three := int32(1), int32(2), int32(3)
	files := []idPartFile{
		{ids: []int64{1, 2}, amounts: []float64{10, 20}, region: "eu", shard: &one},
		{ids: []int64{3, 4, 5}, amounts: []float64{30, 40, 50}, region: "us", shard: &two},
		{ids: []int64{6}, amounts: []float64{60}, region: "eu"},
		{ids: []int64{7}, amounts: []float64{70}, region: "us", shard: &three, stored: true},
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(tbl.Location(), "s3://"), "/")
	spec = tbl.Spec()
	var dfs []iceberg.DataFile
	for i, f := range files {
		data := writeIDPartFile(t, f, withIDs)
		key := fmt.Sprintf("%s/data/part-%d.parquet", prefix, i)
		if _, err := c.S3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		part := map[int]any{1000: f.region, 1001: nil}
		if f.shard != nil {
			part[1001] = *f.shard
		}
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://"+bucket+"/"+key, iceberg.ParquetFile, part, nil, nil,
			int64(len(f.ids)), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		dfs = append(dfs, b.Build())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
		t.Fatalf("add the data files: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

}

// checkIdentityPartitionReads reads a table of identityPartitioned in
// every mode and checks the rows.
func checkIdentityPartitionReads(t *testing.T, c *harness.Cluster, tableName string) {
	t.Helper()
	ctx := context.Background()
	row := map[int64]string{
		1: "id=1|region=eu|shard=1|amount=10",
		2: "id=2|region=eu|shard=1|amount=20",
		3: "id=3|region=us|shard=2|amount=30",
		4: "id=4|region=us|shard=2|amount=40",
		5: "id=5|region=us|shard=2|amount=50",
		6: "id=6|region=eu|shard=NULL|amount=60",
		7: "id=7|region=us|shard=3|amount=70",
	}
	readers := map[string]*connector.Connector{}
	for i, m := range pushdownModes {
		readers[m.name] = modeConnector(t, c, i)
	}
	plain, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	readers["no-pushdown"] = plain
	for _, q := range []struct {
		where string
		sel   []string
		want  []string // nil: the full rows of ids
		ids   []int64
	}{
		{where: "", ids: []int64{1, 2, 3, 4, 5, 6, 7}},
		{where: "region = 'eu'", ids: []int64{1, 2, 6}},
		{where: "region <> 'eu'", ids: []int64{3, 4, 5, 7}},
		{where: "shard = 2", ids: []int64{3, 4, 5}},
		{where: "shard IS NULL", ids: []int64{6}},
		{where: "shard IS NOT NULL AND region = 'us' AND amount > 35", ids: []int64{4, 5, 7}},
		{where: "region = 'us' OR id = 1", ids: []int64{1, 3, 4, 5, 7}},
		{where: "id = 4", sel: []string{"region", "id"}, want: []string{"region=us|id=4"}},
		{where: "amount < 25", sel: []string{"shard"}, want: []string{"shard=1", "shard=1"}},
		{where: "region = 'eu'", sel: []string{"region"}, want: []string{"region=eu", "region=eu", "region=eu"}},
	} {
		want := q.want
		if want == nil {
			for _, id := range q.ids {
				want = append(want, row[id])
			}
			slices.Sort(want)
		}
		for name, conn := range readers {
			res, err := conn.Query(ctx, connector.Query{Table: tableName, Where: q.where, Select: q.sel})
			if err != nil {
				t.Errorf("%s WHERE %q: %v", name, q.where, err)
				continue
			}
			got := renderOrdered(res)
			res.Release()
			if !slices.Equal(got, want) {
				t.Errorf("%s SELECT %v WHERE %q:\n got  %v\n want %v", name, q.sel, q.where, got, want)
			}
		}
	}
}

// Fixture tables written with write.parquet.write-partition-values=false
// (DuckDB's test tables): the data files hold user_id and event_type
// only. Their files differ in size from their manifests, so the catalog
// refuses to plan them and the connector reads plainly — which fills the
// identity partition column from the manifests, where iceberg-go's own
// scan reads NULL (optional) or fails (required: partition_time,
// partition_timestamp). The expected rows come from the folders' partition
// paths and the data files' contents.
func TestFixtureTablesWithoutPartitionColumnsInTheirFilesReadTheirPartitionValues(t *testing.T) {
	harness.RequireShared(t, "testdata/iceberg-tables")
	c := sharedCluster(t)
	ctx := context.Background()
	click, purchase := "user_id=12345|event_type=click", "user_id=67890|event_type=purchase"
	for _, f := range []struct {
		rel, name, where string
		want             []string
	}{
		{"partition_integer", "idpart.fx_integer", "", []string{"partition_col=1337|" + purchase, "partition_col=42|" + click}},
		{"partition_integer", "idpart.fx_integer", "partition_col = 42", []string{"partition_col=42|" + click}},
		{"partition_integer", "idpart.fx_integer", "partition_col IS NULL", nil},
		{"partition_time/default.db/partition_time", "idpart.fx_time", "", []string{"partition_col=08:21:09.000000|" + purchase, "partition_col=12:34:56.000000|" + click}},
		{"partition_time/default.db/partition_time", "idpart.fx_time", "user_id = 12345", []string{"partition_col=12:34:56.000000|" + click}},
		{"partition_timestamp/default.db/partition_timestamp", "idpart.fx_timestamp", "", []string{"partition_col=2023-05-15T14:30:45|" + click, "partition_col=2023-08-22T09:15:20|" + purchase}},
	} {
		if _, _, err := harness.RunFixtureImport(t, c, f.rel, f.name, "-allow-size-mismatch", "-replace"); err != nil {
			t.Fatalf("import %s: %v", f.rel, err)
		}
		for _, o := range []connector.Options{{Mode: connector.PageAware, Force: true}, {NoPushdown: true}} {
			o.Endpoints = c.Endpoints()
			conn, err := connector.New(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := conn.Query(ctx, connector.Query{Table: f.name, Where: f.where})
			conn.Close()
			if err != nil {
				t.Errorf("%s WHERE %q (no-pushdown %v): %v", f.rel, f.where, o.NoPushdown, err)
				continue
			}
			got := renderOrdered(res)
			res.Release()
			// (a plan whose manifest tier prunes every file is no refusal)
			if (res.Stats.Pushdown && len(f.want) > 0) || !slices.Equal(got, f.want) {
				t.Errorf("%s WHERE %q (no-pushdown %v): pushdown %v\n got  %v\n want %v", f.rel, f.where, o.NoPushdown, res.Stats.Pushdown, got, f.want)
			}
		}
	}
}
