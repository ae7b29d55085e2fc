package tableimport

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/linkedin/goavro/v2"

	"github.com/lakeweed/seaweedfs/test/harness"
)

const testLocation = "s3://wh/ns/events-0000"

// prepareGenerated writes a generated table and prepares its import.
func prepareGenerated(t *testing.T, formatVersion int) (harness.GeneratedTable, *Plan) {
	t.Helper()
	gen := harness.WriteGeneratedTable(t, t.TempDir(), formatVersion)
	plan, err := Prepare(PrepareOptions{Dir: gen.Dir, Location: testLocation})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() { plan.Close() })
	return gen, plan
}

func objectByKey(t *testing.T, plan *Plan, s3path string) Object {
	t.Helper()
	key, ok := strings.CutPrefix(s3path, "s3://"+plan.Bucket+"/")
	if !ok {
		t.Fatalf("%s is not in bucket %s", s3path, plan.Bucket)
	}
	for _, o := range plan.Objects {
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("no object for %s", s3path)
	return Object{}
}

// stringsIn collects every string in a goavro native value or a JSON value.
func stringsIn(v any, out *[]string) {
	switch t := v.(type) {
	case string:
		*out = append(*out, t)
	case map[string]any:
		for _, e := range t {
			stringsIn(e, out)
		}
	case []any:
		for _, e := range t {
			stringsIn(e, out)
		}
	case *jsonObject:
		for _, m := range t.members {
			stringsIn(m.value, out)
		}
	}
}

// checkImportedTable verifies a prepared generated table: every snapshot
// scans to the source's rows, no rewritten file names the source folder,
// every size in a manifest or manifest list is the size of the object it
// names, and Avro headers are kept.
func checkImportedTable(t *testing.T, gen harness.GeneratedTable, plan *Plan) (entries []map[string]any) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	materialize(t, plan, root)
	dst := openPlanned(t, plan, root)
	if got, want := len(dst.Metadata().Snapshots()), len(gen.Table.Metadata().Snapshots()); got != want || got != 3 {
		t.Fatalf("rewritten table has %d snapshots, source %d, want 3", got, want)
	}
	if dst.Location() != plan.Location {
		t.Errorf("location %q, want %q", dst.Location(), plan.Location)
	}
	for _, snap := range gen.Table.Metadata().Snapshots() {
		want, err := harness.SnapshotRows(ctx, gen.Table, snap.SnapshotID)
		if err != nil {
			t.Fatalf("scan source snapshot %d: %v", snap.SnapshotID, err)
		}
		got, err := harness.SnapshotRows(ctx, dst, snap.SnapshotID)
		if err != nil {
			t.Fatalf("scan rewritten snapshot %d: %v", snap.SnapshotID, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("snapshot %d: rewritten table scans to\n%v\nthe source to\n%v", snap.SnapshotID, got, want)
		}
	}
	if n := len(harness.CurrentRows(t, ctx, dst)); n != 8 {
		t.Errorf("current snapshot has %d rows after deleting 2 of 10", n)
	}

	srcMarker := filepath.ToSlash(gen.Dir)
	noSourcePath := func(what string, strs []string) {
		for _, s := range strs {
			if strings.Contains(s, srcMarker) {
				t.Errorf("%s still names the source folder: %q", what, s)
			}
		}
	}
	for _, o := range plan.Objects {
		b, err := os.ReadFile(o.Source)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != o.Size {
			t.Errorf("%s: planned size %d, file has %d", o.Key, o.Size, len(b))
		}
		switch o.Kind {
		case KindMetadata:
			doc, err := parseJSON(b)
			if err != nil {
				t.Fatalf("%s: %v", o.Key, err)
			}
			var strs []string
			stringsIn(doc, &strs)
			noSourcePath(o.Key, strs)
		case KindManifestList, KindManifest:
			af, err := readAvroFile(b)
			if err != nil {
				t.Fatalf("%s: %v", o.Key, err)
			}
			var strs []string
			for _, r := range af.records {
				stringsIn(r, &strs)
			}
			noSourcePath(o.Key, strs)
			// Header kept: same entries, same schema text, as the source file.
			srcRel := strings.TrimPrefix(o.Key, "ns/events-0000/")
			srcBytes, err := os.ReadFile(filepath.Join(gen.Dir, filepath.FromSlash(srcRel)))
			if err != nil {
				t.Fatalf("source of %s: %v", o.Key, err)
			}
			srcAF, err := readAvroFile(srcBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(srcAF.meta, af.meta) {
				t.Errorf("%s: Avro header changed", o.Key)
			}
			for _, r := range af.records {
				rec := r.(map[string]any)
				if o.Kind == KindManifestList {
					p, _ := asString(rec["manifest_path"])
					n, _ := asInt64(rec["manifest_length"])
					if m := objectByKey(t, plan, p); m.Size != n {
						t.Errorf("%s: manifest_length %d for %s, the object has %d bytes", o.Key, n, p, m.Size)
					}
					continue
				}
				df := unionValue(rec["data_file"]).(map[string]any)
				p, _ := asString(df["file_path"])
				n, _ := asInt64(df["file_size_in_bytes"])
				if d := objectByKey(t, plan, p); d.Size != n {
					t.Errorf("%s: file_size_in_bytes %d for %s, the object has %d bytes", o.Key, n, p, d.Size)
				}
				entries = append(entries, df)
			}
		}
	}
	return entries
}

func TestImportOfAGeneratedV2TableRewritesMultiTargetPositionDeletesAndScansEqual(t *testing.T) {
	gen, plan := prepareGenerated(t, 2)
	entries := checkImportedTable(t, gen, plan)
	var posDeletes []map[string]any
	for _, df := range entries {
		if c, _ := asInt64(df["content"]); c == contentPositionDelete {
			posDeletes = append(posDeletes, df)
		}
	}
	if len(posDeletes) != 1 {
		t.Fatalf("%d position-delete entries, want 1 (a multi-target file)", len(posDeletes))
	}
	df := posDeletes[0]
	p, _ := asString(df["file_path"])
	obj := objectByKey(t, plan, p)
	if !obj.Rewritten || obj.Kind != KindPositionDeletes {
		t.Fatalf("position-delete object %+v: want rewritten", obj)
	}
	paths := readDeletePaths(t, obj.Source)
	distinct := map[string]bool{}
	for _, fp := range paths {
		distinct[fp] = true
		if !strings.HasPrefix(fp, testLocation+"/data/") {
			t.Errorf("position delete names %q, want a path under %s/data/", fp, testLocation)
		}
	}
	if len(distinct) != 2 {
		t.Fatalf("position-delete file names %d data files, want 2 (multi-target): %v", len(distinct), paths)
	}
	lo, hasLo := boundFor(df, "lower_bounds", posDeleteFilePathFieldID)
	hi, hasHi := boundFor(df, "upper_bounds", posDeleteFilePathFieldID)
	if hasLo != hasHi {
		t.Fatalf("file_path bounds: lower %v upper %v", hasLo, hasHi)
	}
	if hasLo && (string(lo) != slices.Min(paths) || string(hi) != slices.Max(paths)) {
		t.Errorf("file_path bounds [%s, %s], want [%s, %s]", lo, hi, slices.Min(paths), slices.Max(paths))
	}
	// The Parquet schema keeps the Iceberg field ids.
	f, err := os.Open(obj.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	sc := rdr.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		name := sc.Column(i).Name()
		id := sc.Column(i).SchemaNode().FieldID()
		if (name == "file_path" && id != posDeleteFilePathFieldID) || (name == "pos" && id != posDeletePosFieldID) {
			t.Errorf("column %s has field id %d", name, id)
		}
	}
}

func readDeletePaths(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var out []string
	col := filePathColumn(tbl.Schema())
	for _, chunk := range tbl.Column(col).Data().Chunks() {
		s := chunk.(*array.String)
		for i := 0; i < s.Len(); i++ {
			out = append(out, s.Value(i))
		}
	}
	return out
}

func TestImportOfAGeneratedV3TableRewritesDeletionVectorFootersOnly(t *testing.T) {
	gen, plan := prepareGenerated(t, 3)
	entries := checkImportedTable(t, gen, plan)
	var dvs []map[string]any
	for _, df := range entries {
		if c, _ := asInt64(df["content"]); c == contentPositionDelete {
			dvs = append(dvs, df)
		}
	}
	if len(dvs) != 2 {
		t.Fatalf("%d deletion-vector entries, want 2 (one per data file)", len(dvs))
	}
	puffinPath, _ := asString(dvs[0]["file_path"])
	if p2, _ := asString(dvs[1]["file_path"]); p2 != puffinPath {
		t.Fatalf("the two deletion vectors are in different Puffin files (%s, %s); the test wants one file with two blobs", puffinPath, p2)
	}
	obj := objectByKey(t, plan, puffinPath)
	if obj.Kind != KindDeletionVectors || !obj.Rewritten {
		t.Fatalf("Puffin object %+v: want rewritten deletion vectors", obj)
	}
	src := filepath.Join(gen.Dir, filepath.FromSlash(strings.TrimPrefix(obj.Key, "ns/events-0000/")))
	srcBytes, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dstBytes, err := os.ReadFile(obj.Source)
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range dvs {
		off, _ := asInt64(df["content_offset"])
		n, _ := asInt64(df["content_size_in_bytes"])
		if !bytes.Equal(srcBytes[off:off+n], dstBytes[off:off+n]) {
			t.Errorf("blob at %d (+%d) moved or changed", off, n)
		}
		ref, _ := asString(df["referenced_data_file"])
		if !strings.HasPrefix(ref, testLocation+"/data/") {
			t.Errorf("referenced_data_file %q not moved", ref)
		}
	}
	df, err := os.Open(obj.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	footer, err := readPuffinFooter(df, int64(len(dstBytes)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(footer.payload, []byte(filepath.ToSlash(gen.Dir))) || bytes.Count(footer.payload, []byte(testLocation+"/data/")) != 2 {
		t.Errorf("footer not rewritten: %s", footer.payload)
	}
}

func TestImportRefusesAMissingDataFileNamingItAndStagesNothing(t *testing.T) {
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	copyDir := filepath.Join(t.TempDir(), "copy")
	harness.CopyFolder(t, gen.Dir, copyDir)
	var victim string
	_ = filepath.Walk(filepath.Join(copyDir, "data"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && victim == "" && !strings.Contains(filepath.Base(p), "delete") {
			victim = p
		}
		return nil
	})
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Prepare would stage
	_, err := Prepare(PrepareOptions{Dir: copyDir, StripPrefix: gen.Location, Location: testLocation})
	var pe *ProblemsError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a ProblemsError", err)
	}
	if !strings.Contains(err.Error(), filepath.Base(victim)) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("error does not name the missing file %s: %v", filepath.Base(victim), err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("a refused import left %d staging entries in %s", len(left), tmp)
	}
}

func TestImportRefusesAPathOutsideTheStripPrefixNamingIt(t *testing.T) {
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	_, err := Prepare(PrepareOptions{Dir: gen.Dir, StripPrefix: gen.Location + "/data", Location: testLocation})
	if err == nil || !strings.Contains(err.Error(), "is not under the table prefix") || !strings.Contains(err.Error(), "/metadata/snap-") {
		t.Fatalf("got %v, want a refusal naming a manifest list outside the prefix", err)
	}
}

func TestImportReadsGzippedMetadataAndStoresItPlain(t *testing.T) {
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	mdDir := filepath.Join(gen.Dir, "metadata")
	entries, _ := os.ReadDir(mdDir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".metadata.json") {
			p := filepath.Join(mdDir, e.Name())
			b, _ := os.ReadFile(p)
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(b)
			zw.Close()
			os.Remove(p)
			if err := os.WriteFile(filepath.Join(mdDir, strings.TrimSuffix(e.Name(), ".metadata.json")+".gz.metadata.json"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.Remove(filepath.Join(mdDir, "version-hint.text"))
	plan, err := Prepare(PrepareOptions{Dir: gen.Dir, Location: testLocation})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	if !strings.HasSuffix(plan.MetadataFile, ".gz.metadata.json") || strings.Contains(plan.MetadataLocation, ".gz") {
		t.Fatalf("imported %s as %s; want the gzip file stored as plain .metadata.json", plan.MetadataFile, plan.MetadataLocation)
	}
	root := t.TempDir()
	materialize(t, plan, root)
	dst := openPlanned(t, plan, root)
	for e := range dst.Metadata().PreviousFiles() {
		if strings.Contains(e.MetadataFile, ".gz") {
			t.Errorf("metadata-log still names %s", e.MetadataFile)
		}
	}
	if rows := harness.CurrentRows(t, context.Background(), dst); len(rows) != 8 {
		t.Errorf("%d rows, want 8", len(rows))
	}
}

// Every Avro file of the shared fixtures decodes and encodes again to the
// same records (checked with goavro's own reader) and the same header.
func TestAvroFilesOfOtherWritersRoundTripWithoutLosingFields(t *testing.T) {
	root := harness.RequireShared(t, "testdata/iceberg-tables")
	var files []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".avro") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 50 {
		t.Fatalf("found only %d Avro files under %s", len(files), root)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		af, err := readAvroFile(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		out, err := af.encode()
		if err != nil {
			t.Errorf("%s: encode: %v", p, err)
			continue
		}
		again, err := readAvroFile(out)
		if err != nil {
			t.Errorf("%s: read back: %v", p, err)
			continue
		}
		if !reflect.DeepEqual(af.meta, again.meta) || af.sync != again.sync {
			t.Errorf("%s: header changed", p)
		}
		if !reflect.DeepEqual(goavroRecords(t, b), goavroRecords(t, out)) {
			t.Errorf("%s: records changed", p)
		}
	}
}

func goavroRecords(t *testing.T, b []byte) []any {
	t.Helper()
	r, err := goavro.NewOCFReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for r.Scan() {
		d, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestADataFileOfAnotherSizeThanItsManifestSaysIsRefusedUnlessAllowed(t *testing.T) {
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	dir := filepath.Join(t.TempDir(), "copy")
	harness.CopyFolder(t, gen.Dir, dir)
	tasks, err := gen.Table.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("plan the source: %v", err)
	}
	name := filepath.Base(tasks[0].File.FilePath()) // a data file, not the delete file
	victim := filepath.Join(dir, "data", name)
	f, err := os.OpenFile(victim, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	_, err = Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation})
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "but its manifest entry says") {
		t.Fatalf("got %v, want a refusal naming %s and its sizes", err, name)
	}
	plan, err := Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation, AllowSizeMismatch: true})
	if err != nil {
		t.Fatalf("with AllowSizeMismatch: %v", err)
	}
	defer plan.Close()
	if !strings.Contains(strings.Join(plan.Notes, "\n"), name) {
		t.Errorf("the mismatch is not noted: %v", plan.Notes)
	}
}

// puffinFileOf returns the one Puffin file of a generated v3 table.
func puffinFileOf(t *testing.T, dir string) string {
	t.Helper()
	var found []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".puffin") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one Puffin file in %s, found %v", dir, found)
	}
	return found[0]
}

// overwriteAt replaces bytes of a file in place (its size stays).
func overwriteAt(t *testing.T, p string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkCopiedAsIs checks that the plan uploads the deletion-vector file
// byte for byte from the folder, unrewritten, with its manifest entries
// keeping their size and blob ranges and naming their moved data file, and
// that a note names the file and says readers refuse it unless they accept
// bare deletion vectors.
func checkCopiedAsIs(t *testing.T, plan *Plan, srcFile, wantRef string) {
	t.Helper()
	var obj *Object
	for i, o := range plan.Objects {
		if strings.HasSuffix(o.Key, "/"+filepath.Base(srcFile)) {
			obj = &plan.Objects[i]
		}
	}
	if obj == nil {
		t.Fatalf("no object for %s among %d planned", srcFile, len(plan.Objects))
	}
	if obj.Kind != KindDeletionVectors || obj.Rewritten || obj.Source != srcFile {
		t.Errorf("object %+v: want deletion vectors copied from %s, not rewritten", *obj, srcFile)
	}
	src, err := os.ReadFile(srcFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(obj.Source); err != nil || !bytes.Equal(got, src) || obj.Size != int64(len(src)) {
		t.Errorf("the uploaded bytes differ from %s (%d planned bytes, %d in the folder, read error %v)", srcFile, obj.Size, len(src), err)
	}
	notes := strings.Join(plan.Notes, "\n")
	if !strings.Contains(notes, filepath.Base(srcFile)) || !strings.Contains(notes, "is not a Puffin file") ||
		!strings.Contains(notes, "refuse it unless they accept bare deletion vectors") {
		t.Errorf("no note names %s as a deletion vector readers refuse unless they accept bare ones:\n%s", filepath.Base(srcFile), notes)
	}
	entries := 0
	for _, o := range plan.Objects {
		if o.Kind != KindManifest {
			continue
		}
		b, err := os.ReadFile(o.Source)
		if err != nil {
			t.Fatal(err)
		}
		af, err := readAvroFile(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range af.records {
			df := unionValue(r.(map[string]any)["data_file"]).(map[string]any)
			p, _ := asString(df["file_path"])
			if !strings.HasSuffix(p, "/"+filepath.Base(srcFile)) {
				continue
			}
			entries++
			if p != "s3://"+plan.Bucket+"/"+obj.Key {
				t.Errorf("entry names %s, the object is at s3://%s/%s", p, plan.Bucket, obj.Key)
			}
			if n, _ := asInt64(df["file_size_in_bytes"]); n != int64(len(src)) {
				t.Errorf("entry says %d bytes, the copied file has %d", n, len(src))
			}
			if off, _ := asInt64(df["content_offset"]); off < 0 || off >= int64(len(src)) {
				t.Errorf("content_offset %d outside the %d-byte file", off, len(src))
			}
			ref, _ := asString(df["referenced_data_file"])
			if !strings.HasPrefix(ref, wantRef) {
				t.Errorf("referenced_data_file %q, want it under %s", ref, wantRef)
			}
		}
	}
	if entries == 0 {
		t.Errorf("no manifest entry names %s", srcFile)
	}
}

// A deletion-vector file that does not begin with the Puffin magic has no
// footer to rewrite: it is imported byte for byte with a note, while a file
// that begins like Puffin but whose footer is broken is still refused.
func TestADeletionVectorFileThatIsNotPuffinIsCopiedAsItIsWithANote(t *testing.T) {
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 3)

	bare := filepath.Join(t.TempDir(), "bare")
	harness.CopyFolder(t, gen.Dir, bare)
	overwriteAt(t, puffinFileOf(t, bare), 0, []byte{0, 0, 0, 0})
	plan, err := Prepare(PrepareOptions{Dir: bare, StripPrefix: gen.Location, Location: testLocation})
	if err != nil {
		t.Fatalf("a deletion-vector file without the Puffin magic was refused: %v", err)
	}
	defer plan.Close()
	checkCopiedAsIs(t, plan, puffinFileOf(t, bare), testLocation+"/data/")

	broken := filepath.Join(t.TempDir(), "broken")
	harness.CopyFolder(t, gen.Dir, broken)
	pf := puffinFileOf(t, broken)
	st, err := os.Stat(pf)
	if err != nil {
		t.Fatal(err)
	}
	overwriteAt(t, pf, st.Size()-4, []byte("XXXX"))
	_, err = Prepare(PrepareOptions{Dir: broken, StripPrefix: gen.Location, Location: testLocation})
	if err == nil || !strings.Contains(err.Error(), "bad trailing magic") || !strings.Contains(err.Error(), filepath.Base(pf)) {
		t.Fatalf("a Puffin file with a broken footer: got %v, want a refusal naming %s", err, filepath.Base(pf))
	}
}

// The shared fixture legacy_bare_deletion_vector (a deletion vector an
// older writer stored on its own, not in a Puffin file) imports: its
// deletion-vector file goes byte for byte, everything else as usual.
func TestTheLegacyBareDeletionVectorFixtureImportsWithItsBlobCopiedAsItIs(t *testing.T) {
	rel := "legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector"
	dir := harness.FixtureTableDir(t, rel)
	plan, err := Prepare(PrepareOptions{Dir: dir, StripPrefix: harness.FixturePrefix + rel, Location: testLocation})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer plan.Close()
	checkCopiedAsIs(t, plan, filepath.Join(dir, "data", "legacy-bare-deletion-vector.puffin"), testLocation+"/data/00000-0-")
	kinds := plan.CountByKind()
	if kinds[KindDeletionVectors] != 1 || kinds[KindData] != 1 || plan.Snapshots != 2 {
		t.Errorf("plan: %v, %d snapshots; want 1 data file, 1 deletion-vector file, 2 snapshots", kinds, plan.Snapshots)
	}
	root := t.TempDir()
	materialize(t, plan, root)
	tbl := openPlanned(t, plan, root)
	if tbl.Location() != testLocation || len(tbl.Metadata().Snapshots()) != 2 {
		t.Errorf("rewritten table at %s with %d snapshots", tbl.Location(), len(tbl.Metadata().Snapshots()))
	}
}
