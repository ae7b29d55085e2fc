package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/linkedin/goavro/v2"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// importArgs are the endpoint flags of `weed pushdown import` for a cluster.
func importArgs(c *harness.Cluster, dir, tableName string, extra ...string) []string {
	args := []string{"pushdown", "import", "-dir", dir, "-table", tableName,
		"-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint(), "-warehouse", c.Warehouse}
	return append(args, extra...)
}

func loadTable(t *testing.T, c *harness.Cluster, name string) *table.Table {
	t.Helper()
	tbl, err := c.Iceberg(t).LoadTable(context.Background(), strings.Split(name, "."))
	if err != nil {
		t.Fatalf("load %s through the REST catalog: %v", name, err)
	}
	return tbl
}

func tableExists(t *testing.T, c *harness.Cluster, name string) bool {
	t.Helper()
	ok, err := c.Iceberg(t).CheckTableExists(context.Background(), strings.Split(name, "."))
	if err != nil && !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("check %s: %v", name, err)
	}
	return ok
}

// sameRowsAtEverySnapshot compares every snapshot of the source with the
// imported table, scanned by iceberg-go on both sides.
func sameRowsAtEverySnapshot(t *testing.T, src, dst *table.Table) {
	t.Helper()
	ctx := context.Background()
	snaps := src.Metadata().Snapshots()
	if len(dst.Metadata().Snapshots()) != len(snaps) {
		t.Fatalf("imported table has %d snapshots, the source %d", len(dst.Metadata().Snapshots()), len(snaps))
	}
	for _, s := range snaps {
		want, err := harness.SnapshotRows(ctx, src, s.SnapshotID)
		if err != nil {
			t.Fatalf("scan the source folder at snapshot %d: %v", s.SnapshotID, err)
		}
		got, err := harness.SnapshotRows(ctx, dst, s.SnapshotID)
		if err != nil {
			t.Fatalf("scan the imported table at snapshot %d: %v", s.SnapshotID, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("snapshot %d: imported table has %d rows, the source %d (first differences: %v)",
				s.SnapshotID, len(got), len(want), firstDifferences(got, want))
		}
	}
}

func firstDifferences(got, want []string) []string {
	var out []string
	for i := 0; i < max(len(got), len(want)) && len(out) < 3; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			out = append(out, fmt.Sprintf("row %d: %q != %q", i, g, w))
		}
	}
	return out
}

// tableObjects lists the keys under an imported table's location.
func tableObjects(t *testing.T, c *harness.Cluster, location string) []string {
	t.Helper()
	rest := strings.TrimPrefix(location, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	var keys []string
	p := s3.NewListObjectsV2Paginator(c.S3(t), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s: %v", location, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, "s3://"+bucket+"/"+aws.ToString(o.Key))
		}
	}
	return keys
}

// noObjectNamesTheOldPrefix reads every metadata object (metadata JSON,
// manifest lists, manifests) of the imported table and fails when one still
// names the source prefix.
func noObjectNamesTheOldPrefix(t *testing.T, c *harness.Cluster, location, oldPrefix string) {
	t.Helper()
	keys := tableObjects(t, c, location)
	if len(keys) == 0 {
		t.Fatalf("no objects under %s", location)
	}
	checked := 0
	for _, k := range keys {
		var text []byte
		switch {
		case strings.HasSuffix(k, ".json"):
			text = fetchAll(t, c, k)
		case strings.HasSuffix(k, ".avro"):
			r, err := goavro.NewOCFReader(bytes.NewReader(fetchAll(t, c, k)))
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			for r.Scan() {
				rec, err := r.Read()
				if err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				b, _ := json.Marshal(rec)
				text = append(text, b...)
			}
		default:
			continue
		}
		checked++
		if bytes.Contains(text, []byte(oldPrefix)) {
			t.Errorf("%s still names the old prefix %q", k, oldPrefix)
		}
	}
	if checked == 0 {
		t.Errorf("no metadata objects under %s", location)
	}
}

var metadataLine = regexp.MustCompile(`(?m)^metadata: (.+) \(`)

// chosenMetadata is the source metadata file the import reported using.
func chosenMetadata(t *testing.T, stderr string) string {
	t.Helper()
	m := metadataLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the import did not say which metadata file it used:\n%s", stderr)
	}
	return m[1]
}

// Fixture tables written by Spark (equality deletes, lineitem with plain
// and gzip metadata) import, and every snapshot of the imported table scans
// to the rows iceberg-go reads from the source folder.
func TestImportedFixtureTablesScanLikeTheirSourceFolderAtEverySnapshot(t *testing.T) {
	c := sharedCluster(t)
	cases := []struct {
		rel, table string
		extra      []string
	}{
		{"equality_deletes/warehouse/mydb/mytable_partitioned", "imported.eqdel_partitioned", nil},
		// v3 onwards name a manifest list the folder lacks (see the loop test);
		// v2 imports.
		{"equality_deletes/warehouse/mydb/mytable", "imported.eqdel_v2", []string{"-metadata", "v2.metadata.json"}},
		{"iceberg/lineitem_iceberg", "imported.lineitem", nil},
		{"iceberg/lineitem_iceberg_gz", "imported.lineitem_gz", nil},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.rel, "/", "_"), func(t *testing.T) {
			dir := harness.FixtureTableDir(t, tc.rel)
			out, errOut, err := harness.RunFixtureImport(t, c, tc.rel, tc.table, tc.extra...)
			if err != nil {
				t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
			}
			t.Logf("%s", out)
			srcMeta := chosenMetadata(t, errOut)
			prefix := harness.FixtureStripPrefix(dir, tc.rel)
			if prefix == "" {
				b, err := harness.ReadMaybeGzip(srcMeta)
				if err != nil {
					t.Fatal(err)
				}
				var m struct {
					Location string `json:"location"`
				}
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				prefix = m.Location
			}
			src, err := harness.OpenFolderTable(context.Background(), srcMeta, prefix, dir)
			if err != nil {
				t.Fatalf("open the source folder: %v", err)
			}
			dst := loadTable(t, c, tc.table)
			sameRowsAtEverySnapshot(t, src, dst)
			noObjectNamesTheOldPrefix(t, c, dst.Location(), strings.TrimPrefix(prefix, "./"))
		})
	}
}

// Tables iceberg-go writes locally with merge-on-read deletes: v2 with one
// Parquet position-delete file naming two data files, v3 with a Puffin file
// holding two deletion vectors. They import and scan equal at every snapshot.
func TestImportedGeneratedTablesWithPositionDeletesAndDeletionVectorsScanLikeTheSource(t *testing.T) {
	c := sharedCluster(t)
	for _, v := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			gen := harness.WriteGeneratedTable(t, t.TempDir(), v)
			name := fmt.Sprintf("imported.generated_v%d", v)
			out, errOut, err := harness.Weed(t, importArgs(c, gen.Dir, name)...)
			if err != nil {
				t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
			}
			t.Logf("%s", out)
			kind := "position deletes"
			if v == 3 {
				kind = "deletion vectors"
			}
			if !strings.Contains(out, "1 "+kind) {
				t.Errorf("summary does not count one %s file:\n%s", kind, out)
			}
			dst := loadTable(t, c, name)
			sameRowsAtEverySnapshot(t, gen.Table, dst)
			if rows := harness.CurrentRows(t, context.Background(), dst); len(rows) != 8 {
				t.Errorf("current snapshot has %d rows, want 8", len(rows))
			}
			noObjectNamesTheOldPrefix(t, c, dst.Location(), gen.Dir)
		})
	}
}

// objectsUnder counts the keys under a namespace folder of the warehouse.
func objectsUnder(t *testing.T, c *harness.Cluster, ns string) int {
	return len(tableObjects(t, c, "s3://"+c.Warehouse+"/"+ns))
}

// A missing referenced file, a path outside the prefix and an existing
// table without -replace each exit non-zero naming the problem, upload
// nothing and register nothing.
func TestImportRefusalsNameTheProblemAndLeaveNothingBehind(t *testing.T) {
	c := sharedCluster(t)
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)

	t.Run("missing referenced file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "copy")
		harness.CopyFolder(t, gen.Dir, dir)
		var victim string
		entries, _ := os.ReadDir(filepath.Join(dir, "data"))
		for _, e := range entries {
			if victim == "" && !e.IsDir() {
				victim = e.Name()
			}
		}
		if err := os.Remove(filepath.Join(dir, "data", victim)); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := harness.Weed(t, importArgs(c, dir, "refused_missing.t", "-strip-prefix", gen.Location)...)
		if err == nil {
			t.Fatalf("import succeeded without %s:\n%s", victim, out)
		}
		if !strings.Contains(errOut, victim) || !strings.Contains(errOut, "missing") {
			t.Errorf("stderr does not name the missing file %s:\n%s", victim, errOut)
		}
		if tableExists(t, c, "refused_missing.t") || objectsUnder(t, c, "refused_missing") != 0 {
			t.Error("a refused import left a table or files behind")
		}
	})

	t.Run("path outside the prefix", func(t *testing.T) {
		out, errOut, err := harness.Weed(t, importArgs(c, gen.Dir, "refused_outside.t", "-strip-prefix", gen.Location+"/data")...)
		if err == nil {
			t.Fatalf("import succeeded with a prefix that leaves metadata outside:\n%s", out)
		}
		if !strings.Contains(errOut, "is not under the table prefix") || !strings.Contains(errOut, gen.Location+"/metadata/") {
			t.Errorf("stderr does not name a path outside the prefix:\n%s", errOut)
		}
		if tableExists(t, c, "refused_outside.t") || objectsUnder(t, c, "refused_outside") != 0 {
			t.Error("a refused import left a table or files behind")
		}
	})

	t.Run("existing table without -replace", func(t *testing.T) {
		if out, errOut, err := harness.Weed(t, importArgs(c, gen.Dir, "refused_exists.t")...); err != nil {
			t.Fatalf("first import: %v\n%s\n%s", err, out, errOut)
		}
		first := loadTable(t, c, "refused_exists.t").Location()
		before := objectsUnder(t, c, "refused_exists")
		out, errOut, err := harness.Weed(t, importArgs(c, gen.Dir, "refused_exists.t")...)
		if err == nil {
			t.Fatalf("second import without -replace succeeded:\n%s", out)
		}
		if !strings.Contains(errOut, "refused_exists.t already exists") || !strings.Contains(errOut, "-replace") {
			t.Errorf("stderr does not say the table exists:\n%s", errOut)
		}
		if after := objectsUnder(t, c, "refused_exists"); after != before {
			t.Errorf("the refused import uploaded files: %d objects before, %d after", before, after)
		}
		if loc := loadTable(t, c, "refused_exists.t").Location(); loc != first {
			t.Errorf("the table moved from %s to %s", first, loc)
		}
		out, errOut, err = harness.Weed(t, importArgs(c, gen.Dir, "refused_exists.t", "-replace")...)
		if err != nil {
			t.Fatalf("import -replace: %v\n%s\n%s", err, out, errOut)
		}
		dst := loadTable(t, c, "refused_exists.t")
		if dst.Location() == first {
			t.Errorf("-replace kept the old location %s", first)
		}
		sameRowsAtEverySnapshot(t, gen.Table, dst)
		if n := len(tableObjects(t, c, first)); n != 0 {
			t.Errorf("the replaced table's %d files are still at %s", n, first)
		}
	})
}

// fixtureOutcomes is what importing each fixture table gives: "" imports;
// otherwise a phrase of the refusal. The refusals are the fixtures' own
// faults: files that disagree with their manifests, paths outside the
// table folder, metadata iceberg-go (and so the REST catalog) cannot read.
var fixtureOutcomes = map[string]string{
	"add_columns_with_defaults/default.db/add_columns_with_defaults":                     "",
	"add_columns_with_defaults_in_struct/default.db/add_columns_with_defaults_in_struct": "",
	"bad_data":        "has no metadata/ folder",
	"benchmark":       "has no metadata/ folder",
	"big_query_error": "",
	"case_sensitive_names/default.db/case_sensitive_names":                      "",
	"column_mapping/warehouse/default.db/my_table":                              `"data/persistent/column_mapping/warehouse/example/mock_data.parquet" is not under the table prefix`,
	"custom_write_paths":                                                        "",
	"equality_delete_extra_column/warehouse/ns/t":                               "cannot unmarshal number 9876543210123456789",
	"equality_deletes/warehouse/mydb/mytable":                                   `manifest list file "data/persistent/equality_deletes/warehouse/mydb/mytable/metadata/snap-7342794868382145167-1-34f7dec7-90c5-4cd5-b158-5782b73fc010.avro" is missing`,
	"equality_deletes/warehouse/mydb/mytable_partitioned":                       "",
	"generated_bounds":                                                          `"s3://fake-bucket/d/0000000000/t.parquet" is not under the table prefix`,
	"hive_partitioned_table":                                                    "bytes in the folder but its manifest entry says",
	"iceberg/lineitem_iceberg":                                                  "",
	"iceberg/lineitem_iceberg_gz":                                               "",
	"iceberg/lineitem_iceberg_gz_no_hint":                                       "",
	"iceberg/lineitem_iceberg_no_hint":                                          "",
	"iceberg_v1_deprecated/default/legacy_v1":                                   "",
	"iceberg_v1_repro/repro/merch_v1":                                           "",
	"legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector": "",
	"map_stats/default.db/map_stats":                                            "",
	"name_mapping/warehouse_1/mydb/t1":                                          "bytes in the folder but its manifest entry says",
	"null_stats/default/test_nulls":                                             "",
	"partition_bigint":                                                          "bytes in the folder but its manifest entry says",
	"partition_binary":                                                          "bytes in the folder but its manifest entry says",
	"partition_bool":                                                            "bytes in the folder but its manifest entry says",
	"partition_decimal_bigint":                                                  "bytes in the folder but its manifest entry says",
	"partition_decimal_integer":                                                 "bytes in the folder but its manifest entry says",
	"partition_decimal_smallint":                                                "bytes in the folder but its manifest entry says",
	"partition_double":                                                          "bytes in the folder but its manifest entry says",
	"partition_fixed_length_binary/default.db/partition_fixed_length_binary":    "bytes in the folder but its manifest entry says",
	"partition_float":                                                           "bytes in the folder but its manifest entry says",
	"partition_integer":                                                         "bytes in the folder but its manifest entry says",
	"partition_time/default.db/partition_time":                                  "bytes in the folder but its manifest entry says",
	"partition_timestamp/default.db/partition_timestamp":                        "bytes in the folder but its manifest entry says",
	"partition_timestamptz/default.db/partition_timestamptz":                    "bytes in the folder but its manifest entry says",
	"timestamptz_ns":                                                            "next-row-id is required for v3 tables",
	"uuid":                                                                      "",
}

// fixtureTables lists the table folders under iceberg-tables (folders with
// metadata/), plus the top-level folders that hold none.
func fixtureTables(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() && info.Name() == "metadata" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			seen[filepath.ToSlash(rel)] = true
			return filepath.SkipDir
		}
		return nil
	})
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		covered := false
		for rel := range seen {
			if rel == e.Name() || strings.HasPrefix(rel, e.Name()+"/") {
				covered = true
			}
		}
		if !covered {
			seen[e.Name()] = true
		}
	}
	var out []string
	for rel := range seen {
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

// Every fixture table either imports (and loads back through the REST
// catalog) or is refused with its expected reason; none panics.
func TestImportOfEveryFixtureTableImportsOrIsRefusedForItsKnownFault(t *testing.T) {
	root := harness.RequireShared(t, "testdata/iceberg-tables")
	c := sharedCluster(t)
	var report []string
	for i, rel := range fixtureTables(t, root) {
		want, known := fixtureOutcomes[rel]
		name := fmt.Sprintf("fixtures.t%02d_%s", i, regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(filepath.Base(rel)), "_"))
		out, errOut, err := harness.RunFixtureImport(t, c, rel, name)
		if strings.Contains(errOut, "panic:") || strings.Contains(errOut, "goroutine ") {
			t.Errorf("%s: the import panicked:\n%s", rel, errOut)
			continue
		}
		outcome := "imports"
		if err != nil {
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			outcome = "refused: " + strings.Join(lines[max(0, len(lines)-2):], " / ")
		} else {
			tbl := loadTable(t, c, name)
			rows, serr := tbl.Scan().ToArrowTable(context.Background())
			if serr != nil {
				outcome += fmt.Sprintf(" (iceberg-go cannot scan it: %v)", serr)
			} else {
				outcome += fmt.Sprintf(" (%d snapshots, current scans to %d rows)", len(tbl.Metadata().Snapshots()), rows.NumRows())
				rows.Release()
			}
		}
		report = append(report, fmt.Sprintf("%-80s %s", rel, outcome))
		switch {
		case !known:
			t.Errorf("%s: no expected outcome recorded; it %s", rel, outcome)
		case want == "" && err != nil:
			t.Errorf("%s: expected to import, %s\nstdout:\n%s", rel, outcome, out)
		case want != "" && err == nil:
			t.Errorf("%s: expected a refusal containing %q, but it imported:\n%s", rel, want, out)
		case want != "" && !strings.Contains(errOut, want):
			t.Errorf("%s: refused, but not for %q:\n%s", rel, want, errOut)
		case want != "" && tableExists(t, c, name):
			t.Errorf("%s: refused but registered", rel)
		}
	}
	// The size check can be waived: the partition fixtures then import.
	out, errOut, err := harness.RunFixtureImport(t, c, "partition_integer", "fixtures.partition_integer_sizes_waived", "-allow-size-mismatch")
	if err != nil {
		t.Errorf("partition_integer -allow-size-mismatch: %v\n%s\n%s", err, out, errOut)
	} else {
		outcome := "imports"
		if rows, serr := loadTable(t, c, "fixtures.partition_integer_sizes_waived").Scan().ToArrowTable(context.Background()); serr != nil {
			outcome += fmt.Sprintf(" (iceberg-go cannot scan it: %v)", serr)
		} else {
			outcome += fmt.Sprintf(" (current scans to %d rows)", rows.NumRows())
			rows.Release()
		}
		report = append(report, fmt.Sprintf("%-80s %s", "partition_integer -allow-size-mismatch", outcome))
	}
	// bad_data's one file is JSON lines, not table metadata.
	_, errOut, err = harness.Weed(t, importArgs(c, filepath.Join(root, "bad_data"), "fixtures.bad_json", "-metadata", "bad_iceberg_metadata.json")...)
	report = append(report, fmt.Sprintf("%-80s %s", "bad_data -metadata bad_iceberg_metadata.json", strings.TrimSpace(errOut)))
	if err == nil || !strings.Contains(errOut, "bad_iceberg_metadata.json is not JSON") {
		t.Errorf("bad_data/bad_iceberg_metadata.json: want a clean refusal, got %v:\n%s", err, errOut)
	}
	t.Logf("fixture outcomes:\n%s", strings.Join(report, "\n"))
}
