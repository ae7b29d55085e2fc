package catalog

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// validateFiles checks client-resolved data files against the manifests of
// the snapshot (catalog-validated mode): every descriptor must name a live
// data file of the snapshot with the manifest's identity, sequence number,
// spec and partition, and list exactly the delete files that apply to it,
// each with the manifest's fields. It returns the catalog's own view of the
// files (manifest metrics included) so planning never uses client values.
func validateFiles(table string, snapshot int64, req []*pushdown_pb.DataFileDescriptor, files *tables.Files, t *descriptor.Table) ([]plan.DataFile, map[string][]deletes.File, error) {
	out := make([]plan.DataFile, 0, len(req))
	applied := map[string][]deletes.File{}
	seen := map[string]int{}
	for i, d := range req {
		what := fmt.Sprintf("data_files[%d]", i)
		deny := func(format string, args ...any) error {
			return perr.New(perr.PermissionDenied, "catalog-validated: %s %s: %s (table %s, snapshot %d)", what, d.GetPath(), fmt.Sprintf(format, args...), table, snapshot)
		}
		if j, dup := seen[d.GetPath()]; dup {
			return nil, nil, perr.New(perr.InvalidArgument, "%s %s repeats data_files[%d]", what, d.GetPath(), j)
		}
		seen[d.GetPath()] = i
		idx, ok := files.ByPath[d.GetPath()]
		if !ok {
			return nil, nil, deny("not a live data file of the snapshot")
		}
		m := files.Data[idx]
		switch {
		case d.GetSizeBytes() != m.Size:
			return nil, nil, deny("size_bytes %d does not match the manifest's %d", d.GetSizeBytes(), m.Size)
		case d.GetRecordCount() != m.RecordCount:
			return nil, nil, deny("record_count %d does not match the manifest's %d", d.GetRecordCount(), m.RecordCount)
		case d.GetDataSequenceNumber() != m.DataSeq:
			return nil, nil, deny("data_sequence_number %d does not match the manifest's %d", d.GetDataSequenceNumber(), m.DataSeq)
		case d.GetPartitionSpecId() != m.SpecID:
			return nil, nil, deny("partition_spec_id %d does not match the manifest's %d", d.GetPartitionSpecId(), m.SpecID)
		}
		if err := samePartition(t, m.SpecID, d.GetPartitionValues(), m.Partition); err != nil {
			return nil, nil, deny("partition_values: %v", err)
		}
		want := files.Applied[m.Path]
		if err := sameDeletes(what, d, want, t, deny); err != nil {
			return nil, nil, err
		}
		out = append(out, m)
		if len(want) > 0 {
			applied[m.Path] = want
		}
	}
	return out, applied, nil
}

// samePartition compares client partition values with the manifest's by
// their canonical encoding.
func samePartition(t *descriptor.Table, specID int32, got []byte, manifest map[int]any) error {
	want, err := t.Partition(specID, manifest)
	if err != nil {
		return perr.New(perr.Corrupt, "manifest partition: %v", err)
	}
	spec := t.Specs[int(specID)]
	decoded, err := descriptor.DecodePartition(got, spec, descriptor.SchemasSourceType(t.Schemas))
	if err != nil {
		return err
	}
	canon, err := descriptor.EncodePartition(spec, descriptor.SchemasSourceType(t.Schemas), decoded)
	if err != nil {
		return err
	}
	if !bytes.Equal(canon, want) {
		return fmt.Errorf("%s does not match the manifest's %s", canon, want)
	}
	return nil
}

// deleteKey identifies a delete file within a snapshot: its path, plus the
// blob offset for deletion vectors (one Puffin file holds many).
func deleteKey(path string, dv bool, offset int64) string {
	if dv {
		return fmt.Sprintf("%s@%d", path, offset)
	}
	return path
}

func sameDeletes(what string, d *pushdown_pb.DataFileDescriptor, want []deletes.File, t *descriptor.Table, deny func(string, ...any) error) error {
	expected := map[string]deletes.File{}
	for _, f := range want {
		expected[deleteKey(f.Path, f.IsDV(), f.BlobOffset)] = f
	}
	matched := map[string]bool{}
	for j, ref := range d.GetDeletes() {
		got, err := descriptor.ToDeleteFile(fmt.Sprintf("%s.deletes[%d]", what, j), ref, nil)
		if err != nil {
			return err
		}
		k := deleteKey(got.Path, got.IsDV(), got.BlobOffset)
		m, ok := expected[k]
		if !ok {
			return deny("deletes[%d] %s does not apply to this data file at the snapshot (added)", j, ref.GetPath())
		}
		if matched[k] {
			return perr.New(perr.InvalidArgument, "%s.deletes[%d] %s is listed twice", what, j, ref.GetPath())
		}
		matched[k] = true
		field := func(name string, got, want any) error {
			return deny("deletes[%d] %s: %s %v does not match the manifest's %v", j, ref.GetPath(), name, got, want)
		}
		switch {
		case got.Size != m.Size:
			return field("size_bytes", got.Size, m.Size)
		case got.Content != m.Content:
			return field("content", ref.GetContent(), descriptor.WireContent(m.Content))
		case got.Format != m.Format:
			return field("file_format", ref.GetFileFormat(), descriptor.WireFormat(m.Format))
		case got.DataSeq != m.DataSeq:
			return field("data_sequence_number", got.DataSeq, m.DataSeq)
		case got.SpecID != m.SpecID:
			return field("partition_spec_id", got.SpecID, m.SpecID)
		case !slices.Equal(got.EqualityFieldIDs, m.EqualityFieldIDs):
			return field("equality_field_ids", got.EqualityFieldIDs, m.EqualityFieldIDs)
		case got.BlobOffset != m.BlobOffset || got.BlobLength != m.BlobLength:
			return deny("deletes[%d] %s: blob [%d, +%d) does not match the manifest's [%d, +%d)", j, ref.GetPath(), got.BlobOffset, got.BlobLength, m.BlobOffset, m.BlobLength)
		case got.RecordCount != 0 && got.RecordCount != m.RecordCount:
			return field("record_count", got.RecordCount, m.RecordCount)
		case got.ReferencedDataFile != "" && got.ReferencedDataFile != m.ReferencedDataFile:
			return field("referenced_data_file", got.ReferencedDataFile, m.ReferencedDataFile)
		}
		if err := samePartition(t, m.SpecID, ref.GetPartitionValues(), m.Partition); err != nil {
			return deny("deletes[%d] %s: partition_values: %v", j, ref.GetPath(), err)
		}
	}
	for _, f := range want {
		if !matched[deleteKey(f.Path, f.IsDV(), f.BlobOffset)] {
			return deny("omits delete file %s, which applies to it at the snapshot", f.Path)
		}
	}
	return nil
}
