package descriptor

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// TableOf is the descriptor view of an iceberg-go table's metadata.
func TableOf(md table.Metadata) *Table {
	specs := map[int]iceberg.PartitionSpec{}
	for _, sp := range md.PartitionSpecs() {
		specs[sp.ID()] = sp
	}
	return &Table{Specs: specs, Schemas: md.Schemas()}
}

// ForSnapshot does a connector's Iceberg planning with iceberg-go (the
// scan's PlanFiles: data files with their position-delete files, equality
// deletes and deletion vectors) and describes the result for a
// client-resolved Plan request. Delete files' data sequence numbers come
// from the snapshot's manifest entries (scan tasks do not carry them).
func ForSnapshot(ctx context.Context, tbl *table.Table, snapshotID int64) ([]*pushdown_pb.DataFileDescriptor, error) {
	snap := tbl.Metadata().SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not a snapshot of the table", snapshotID)
	}
	tasks, err := tbl.Scan(table.WithSnapshotID(snapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan snapshot %d: %w", snapshotID, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snapshotID, err)
	}
	seqs := map[string]int64{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			seqs[deleteSeqKey(e.DataFile())] = e.SequenceNum()
		}
	}
	t := TableOf(tbl.Metadata())
	out := make([]*pushdown_pb.DataFileDescriptor, 0, len(tasks))
	seen := map[string]bool{}
	for _, task := range tasks {
		df := task.File
		if seen[df.FilePath()] {
			continue // a file split into several tasks
		}
		seen[df.FilePath()] = true
		var seq int64
		if task.DataSequenceNumber != nil {
			seq = *task.DataSequenceNumber
		}
		var dels []deletes.File
		for _, group := range [][]iceberg.DataFile{task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles} {
			for _, d := range group {
				s, ok := seqs[deleteSeqKey(d)]
				if !ok {
					return nil, fmt.Errorf("delete file %s of %s is in no delete manifest of snapshot %d", d.FilePath(), df.FilePath(), snapshotID)
				}
				f, err := deletes.FromIceberg(d, s)
				if err != nil {
					return nil, err
				}
				dels = append(dels, f)
			}
		}
		sort.Slice(dels, func(i, j int) bool {
			if dels[i].Path != dels[j].Path {
				return dels[i].Path < dels[j].Path
			}
			return dels[i].BlobOffset < dels[j].BlobOffset
		})
		pd := plan.DataFile{Path: df.FilePath(), Size: df.FileSizeBytes(), RecordCount: df.Count(), SpecID: df.SpecID(),
			Partition: df.Partition(), DataSeq: seq}
		desc, err := FromDataFile(&pd, dels, t)
		if err != nil {
			return nil, err
		}
		out = append(out, desc)
	}
	return out, nil
}

func deleteSeqKey(d iceberg.DataFile) string {
	if off := d.ContentOffset(); off != nil {
		return fmt.Sprintf("%s@%d", d.FilePath(), *off)
	}
	return d.FilePath()
}
