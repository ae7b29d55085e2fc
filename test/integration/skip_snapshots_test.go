package integration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// The fixture whose history names a manifest list that is not in the
// folder (snapshot 7342794868382145167 of equality_deletes/.../mytable):
// without -skip-unreadable-snapshots the import refuses and names the flag;
// with it the import leaves that snapshot out with a note naming it and its
// (shortened) manifest list, and every snapshot kept, the current one
// included, reads through pushdown exactly as iceberg-go scans it, and the
// current snapshot holds the rows iceberg-go scans from the source folder.
func TestImportWithSkipUnreadableSnapshotsImportsTheFixtureWithAMissingManifestListAndItReadsAsIcebergGoScansIt(t *testing.T) {
	const rel = "equality_deletes/warehouse/mydb/mytable"
	const missingSnapshot = "7342794868382145167"
	const missingList = "metadata/snap-7342794868382145167-1-34f7dec7-90c5-4cd5-b158-5782b73fc010.avro"
	dir := harness.FixtureTableDir(t, rel)
	c := sharedCluster(t)
	ctx := context.Background()

	_, errOut, err := harness.RunFixtureImport(t, c, rel, "skipsnap.refused")
	if err == nil {
		t.Fatalf("the import without -skip-unreadable-snapshots succeeded")
	}
	if !strings.Contains(errOut, "is missing") || !strings.Contains(errOut, "-skip-unreadable-snapshots") {
		t.Errorf("the refusal does not name the missing manifest list and the flag:\n%s", errOut)
	}

	out, errOut, err := harness.RunFixtureImport(t, c, rel, "skipsnap.mytable", "-skip-unreadable-snapshots")
	if err != nil {
		t.Fatalf("import -skip-unreadable-snapshots: %v\n%s\n%s", err, out, errOut)
	}
	var note string
	for _, line := range strings.Split(errOut, "\n") {
		if strings.Contains(line, "left out 1 unreadable snapshot") {
			note = line
		}
	}
	if !strings.Contains(note, missingSnapshot) || !strings.Contains(note, missingList) || strings.Contains(note, "data/persistent/") {
		t.Errorf("no note names snapshot %s and its manifest list %s (shortened):\n%s", missingSnapshot, missingList, errOut)
	}
	if !strings.Contains(out, "skipped:   1 unreadable snapshots") {
		t.Errorf("the summary does not count the skipped snapshot:\n%s", out)
	}

	tbl := loadTable(t, c, "skipsnap.mytable")
	for _, s := range tbl.Metadata().Snapshots() {
		if strings.Contains(s.ManifestList, filepath.Base(missingList)) {
			t.Errorf("the imported table still has snapshot %d naming %s", s.SnapshotID, missingList)
		}
	}
	if got := len(tbl.Metadata().Snapshots()); got != 5 {
		t.Errorf("imported %d snapshots, want the 5 readable of 6", got)
	}
	rep := &tableReport{rel: rel}
	checkFixtureTable(t, newConformanceReaders(t, c), importedFixture{rel: rel, name: "skipsnap.mytable", stderr: errOut}, tbl,
		conformanceExpectation{outcome: outcomeAgrees}, rep)
	if rep.reads == 0 {
		t.Errorf("no pushdown read was compared")
	}

	src, err := harness.OpenFolderTable(ctx, filepath.Join(dir, "metadata", "v7.metadata.json"), harness.FixturePrefix+rel, dir)
	if err != nil {
		t.Fatal(err)
	}
	cur := src.CurrentSnapshot().SnapshotID
	want, err := harness.SnapshotRows(ctx, src, cur)
	if err != nil {
		t.Fatalf("scan the source folder's current snapshot: %v", err)
	}
	got, err := harness.SnapshotRows(ctx, tbl, cur)
	if err != nil {
		t.Fatalf("scan the imported current snapshot: %v", err)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the imported current snapshot %d scans to %d rows, the source folder's to %d:\n%v\n%v", cur, len(got), len(want), got, want)
	}
	t.Logf("kept %d snapshots; %d pushdown reads, %d rows compared; current snapshot %d rows", len(tbl.Metadata().Snapshots()), rep.reads, rep.compared, len(want))
}
