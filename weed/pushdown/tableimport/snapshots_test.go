package tableimport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// withoutManifestList copies a generated v2 table (three snapshots) and
// removes the manifest list of the snapshot pick chooses.
func withoutManifestList(t *testing.T, pick func(snaps []table.Snapshot) table.Snapshot) (harness.GeneratedTable, string, table.Snapshot) {
	t.Helper()
	gen := harness.WriteGeneratedTable(t, t.TempDir(), 2)
	dir := filepath.Join(t.TempDir(), "copy")
	harness.CopyFolder(t, gen.Dir, dir)
	snap := pick(gen.Table.Metadata().Snapshots())
	rel, ok := strings.CutPrefix(snap.ManifestList, strings.TrimSuffix(gen.Location, "/")+"/")
	if !ok {
		t.Fatalf("manifest list %s is not under %s", snap.ManifestList, gen.Location)
	}
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
	return gen, dir, snap
}

func firstSnapshot(s []table.Snapshot) table.Snapshot { return s[0] }

func TestImportOfATableWithAMissingOlderManifestListRefusesNamingTheFlag(t *testing.T) {
	gen, dir, _ := withoutManifestList(t, firstSnapshot)
	_, err := Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation})
	var pe *ProblemsError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a ProblemsError", err)
	}
	if !strings.Contains(err.Error(), "is missing") || !strings.Contains(err.Error(), SkipUnreadableFlag) {
		t.Errorf("the refusal does not name the missing manifest list and %s:\n%v", SkipUnreadableFlag, err)
	}
}

func TestImportWithSkipUnreadableSnapshotsLeavesOutTheUnreadableOneAndScansTheRestEqual(t *testing.T) {
	gen, dir, gone := withoutManifestList(t, firstSnapshot)
	plan, err := Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation, SkipUnreadableSnapshots: true})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() { plan.Close() })
	if plan.SkippedSnapshots != 1 || plan.Snapshots != 2 {
		t.Errorf("skipped %d snapshots and kept %d, want 1 and 2", plan.SkippedSnapshots, plan.Snapshots)
	}
	id := fmt.Sprint(gone.SnapshotID)
	listName := filepath.Base(gone.ManifestList)
	noted := false
	for _, n := range plan.Notes {
		if strings.Contains(n, id) && strings.Contains(n, "metadata/"+listName) && !strings.Contains(n, gen.Location) {
			noted = true
		}
	}
	if !noted {
		t.Errorf("no note names snapshot %s and its manifest list metadata/%s (shortened): %q", id, listName, plan.Notes)
	}
	root := t.TempDir()
	materialize(t, plan, root)
	dst := openPlanned(t, plan, root)
	if dst.SnapshotByID(gone.SnapshotID) != nil {
		t.Errorf("the unreadable snapshot %d is still in the imported metadata", gone.SnapshotID)
	}
	for e := range dst.Metadata().SnapshotLogs() {
		if e.SnapshotID == gone.SnapshotID {
			t.Errorf("the snapshot log still names snapshot %d", gone.SnapshotID)
		}
	}
	ctx := context.Background()
	for _, snap := range gen.Table.Metadata().Snapshots()[1:] {
		want, err := harness.SnapshotRows(ctx, gen.Table, snap.SnapshotID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := harness.SnapshotRows(ctx, dst, snap.SnapshotID)
		if err != nil {
			t.Fatalf("scan imported snapshot %d: %v", snap.SnapshotID, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("snapshot %d scans to %v, the source to %v", snap.SnapshotID, got, want)
		}
	}
	if n := len(harness.CurrentRows(t, ctx, dst)); n != 8 {
		t.Errorf("current snapshot has %d rows, want 8", n)
	}
}

func TestSkipUnreadableSnapshotsStillRefusesAnUnreadableCurrentSnapshot(t *testing.T) {
	gen, dir, _ := withoutManifestList(t, func(s []table.Snapshot) table.Snapshot { return s[len(s)-1] })
	_, err := Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation, SkipUnreadableSnapshots: true})
	if err == nil || !strings.Contains(err.Error(), "the current snapshot") {
		t.Fatalf("got %v, want a refusal saying the current snapshot cannot be read", err)
	}
	_, err = Prepare(PrepareOptions{Dir: dir, StripPrefix: gen.Location, Location: testLocation})
	if err == nil || strings.Contains(err.Error(), SkipUnreadableFlag) {
		t.Errorf("without the flag the refusal must not offer %s when the current snapshot is unreadable: %v", SkipUnreadableFlag, err)
	}
}
