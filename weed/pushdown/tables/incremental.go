package tables

import (
	"context"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// AppendedFiles lists the data files an incremental append scan from
// startID (exclusive) to endID (inclusive) reads, as Iceberg defines it:
// the files added by the "append" snapshots on endID's ancestry after
// startID (overwrite, replace and delete snapshots add nothing to it; no
// delete file applies). startID must be an ancestor of endID.
func (r *Resolver) AppendedFiles(ctx context.Context, t *Table, startID, endID int64) ([]plan.DataFile, error) {
	if t.Meta.SnapshotByID(endID) == nil {
		return nil, perr.New(perr.InvalidArgument, "end-snapshot-id %d is not a snapshot of table %s", endID, t.Name)
	}
	between, found := table.AncestorsBetween(endID, startID, t.Meta.SnapshotByID)
	if !found {
		return nil, perr.New(perr.InvalidArgument, "start-snapshot-id %d is not an ancestor of end-snapshot-id %d in table %s", startID, endID, t.Name)
	}
	appends := map[int64]bool{}
	for _, s := range between {
		if s.Summary == nil || s.Summary.Operation == "" {
			return nil, perr.New(perr.InvalidArgument, "snapshot %d of table %s records no operation, so an incremental append scan cannot tell what it added", s.SnapshotID, t.Name)
		}
		switch s.Summary.Operation {
		case table.OpAppend:
			appends[s.SnapshotID] = true
		case table.OpReplace, table.OpOverwrite, table.OpDelete:
		default:
			return nil, perr.New(perr.InvalidArgument, "snapshot %d of table %s has operation %q", s.SnapshotID, t.Name, s.Summary.Operation)
		}
	}
	fio := &filerIO{ctx: ctx, r: r}
	manifests := map[string]iceberg.ManifestFile{}
	for i := range between {
		s := &between[i]
		if !appends[s.SnapshotID] {
			continue
		}
		list, err := r.manifestList(fio, s)
		if err != nil {
			return nil, err
		}
		for _, m := range list {
			if m.ManifestContent() == iceberg.ManifestContentData && appends[m.SnapshotID()] {
				manifests[m.FilePath()] = m
			}
		}
	}
	paths := make([]string, 0, len(manifests))
	for p := range manifests {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var out []plan.DataFile
	seen := map[string]bool{}
	for _, p := range paths {
		entries, err := r.entries(fio, manifests[p])
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			if e.Status() != iceberg.EntryStatusADDED || !appends[e.SnapshotID()] || df.ContentType() != iceberg.EntryContentData {
				continue
			}
			if df.FileFormat() != iceberg.ParquetFile {
				return nil, perr.New(perr.FailedPrecondition, "data file %s is %s; pushdown plans Parquet files only", df.FilePath(), df.FileFormat())
			}
			if seen[df.FilePath()] {
				continue
			}
			seen[df.FilePath()] = true
			out = append(out, dataFileOf(e))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
