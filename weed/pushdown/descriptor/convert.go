package descriptor

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// Table is what decoding descriptors needs to know about the table.
type Table struct {
	Specs   map[int]iceberg.PartitionSpec
	Schemas []*iceberg.Schema
}

func (t Table) spec(id int32) (iceberg.PartitionSpec, bool) {
	s, ok := t.Specs[int(id)]
	return s, ok
}

// Partition encodes a partition map under spec id of t.
func (t Table) Partition(specID int32, p map[int]any) ([]byte, error) {
	spec, ok := t.spec(specID)
	if !ok {
		return nil, fmt.Errorf("partition spec %d is not a spec of the table", specID)
	}
	return EncodePartition(spec, SchemasSourceType(t.Schemas), p)
}

// FormatOf maps the wire format to the delete engine's.
func FormatOf(f pushdown_pb.FileFormat) (deletes.Format, bool) {
	switch f {
	case pushdown_pb.FileFormat_FILE_FORMAT_PARQUET:
		return deletes.FormatParquet, true
	case pushdown_pb.FileFormat_FILE_FORMAT_AVRO:
		return deletes.FormatAvro, true
	case pushdown_pb.FileFormat_FILE_FORMAT_ORC:
		return deletes.FormatORC, true
	case pushdown_pb.FileFormat_FILE_FORMAT_PUFFIN:
		return deletes.FormatPuffin, true
	}
	return 0, false
}

// WireFormat maps the delete engine's format to the wire's.
func WireFormat(f deletes.Format) pushdown_pb.FileFormat {
	switch f {
	case deletes.FormatParquet:
		return pushdown_pb.FileFormat_FILE_FORMAT_PARQUET
	case deletes.FormatAvro:
		return pushdown_pb.FileFormat_FILE_FORMAT_AVRO
	case deletes.FormatORC:
		return pushdown_pb.FileFormat_FILE_FORMAT_ORC
	case deletes.FormatPuffin:
		return pushdown_pb.FileFormat_FILE_FORMAT_PUFFIN
	}
	return pushdown_pb.FileFormat_FILE_FORMAT_UNSPECIFIED
}

// ContentOf maps the wire content to the delete engine's.
func ContentOf(c pushdown_pb.DeleteContent) (deletes.Content, bool) {
	switch c {
	case pushdown_pb.DeleteContent_POSITION_DELETES:
		return deletes.PositionDeletes, true
	case pushdown_pb.DeleteContent_EQUALITY_DELETES:
		return deletes.EqualityDeletes, true
	}
	return 0, false
}

// WireContent maps the delete engine's content to the wire's.
func WireContent(c deletes.Content) pushdown_pb.DeleteContent {
	switch c {
	case deletes.PositionDeletes:
		return pushdown_pb.DeleteContent_POSITION_DELETES
	case deletes.EqualityDeletes:
		return pushdown_pb.DeleteContent_EQUALITY_DELETES
	}
	return pushdown_pb.DeleteContent_DELETE_CONTENT_UNSPECIFIED
}

// FromDataFile describes a data file and the delete files that apply to it.
// With t set, partition values are encoded; without, they are left empty
// (volume-side requests need no partitions).
func FromDataFile(d *plan.DataFile, dels []deletes.File, t *Table) (*pushdown_pb.DataFileDescriptor, error) {
	out := &pushdown_pb.DataFileDescriptor{Path: d.Path, SizeBytes: d.Size, RecordCount: d.RecordCount,
		DataSequenceNumber: d.DataSeq, PartitionSpecId: d.SpecID}
	if t != nil {
		pv, err := t.Partition(d.SpecID, d.Partition)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Path, err)
		}
		out.PartitionValues = pv
	}
	for _, f := range dels {
		ref, err := FromDeleteFile(f, t)
		if err != nil {
			return nil, err
		}
		out.Deletes = append(out.Deletes, ref)
	}
	return out, nil
}

// FromDeleteFile describes a delete file.
func FromDeleteFile(f deletes.File, t *Table) (*pushdown_pb.DeleteFileRef, error) {
	ref := &pushdown_pb.DeleteFileRef{Path: f.Path, SizeBytes: f.Size, PartitionSpecId: f.SpecID, DataSequenceNumber: f.DataSeq,
		Content: WireContent(f.Content), FileFormat: WireFormat(f.Format), BlobOffset: f.BlobOffset, BlobLength: f.BlobLength,
		ReferencedDataFile: f.ReferencedDataFile, RecordCount: f.RecordCount}
	for _, id := range f.EqualityFieldIDs {
		ref.EqualityFieldIds = append(ref.EqualityFieldIds, int32(id))
	}
	if t != nil {
		pv, err := t.Partition(f.SpecID, f.Partition)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		ref.PartitionValues = pv
	}
	return ref, nil
}

// ToDataFile decodes a descriptor, checking its shape; with t set, the
// partition spec must be one of the table's and partition values decode
// under it. what names the descriptor in errors (e.g. "data_files[3]").
func ToDataFile(what string, d *pushdown_pb.DataFileDescriptor, t *Table) (plan.DataFile, []deletes.File, error) {
	bad := func(format string, args ...any) error {
		return perr.New(perr.InvalidArgument, "%s %s: %s", what, d.GetPath(), fmt.Sprintf(format, args...))
	}
	if d.GetPath() == "" {
		return plan.DataFile{}, nil, perr.New(perr.InvalidArgument, "%s: path is empty", what)
	}
	if _, err := fileread.FilerPath(d.GetPath()); err != nil {
		return plan.DataFile{}, nil, bad("%v", err)
	}
	switch {
	case d.GetSizeBytes() <= 0:
		return plan.DataFile{}, nil, bad("size_bytes %d must be positive", d.GetSizeBytes())
	case d.GetRecordCount() < 0:
		return plan.DataFile{}, nil, bad("record_count %d is negative", d.GetRecordCount())
	case d.GetDataSequenceNumber() < 0:
		return plan.DataFile{}, nil, bad("data_sequence_number %d is negative", d.GetDataSequenceNumber())
	}
	out := plan.DataFile{Path: d.GetPath(), Size: d.GetSizeBytes(), RecordCount: d.GetRecordCount(), SpecID: d.GetPartitionSpecId(), DataSeq: d.GetDataSequenceNumber()}
	if t != nil {
		p, err := t.decodePartition(d.GetPartitionSpecId(), d.GetPartitionValues())
		if err != nil {
			return plan.DataFile{}, nil, bad("%v", err)
		}
		out.Partition = p
	}
	var dels []deletes.File
	for j, ref := range d.GetDeletes() {
		f, err := ToDeleteFile(fmt.Sprintf("%s.deletes[%d]", what, j), ref, t)
		if err != nil {
			return plan.DataFile{}, nil, err
		}
		dels = append(dels, f)
	}
	out.HasDeletes = len(dels) > 0
	return out, dels, nil
}

func (t *Table) decodePartition(specID int32, raw []byte) (map[int]any, error) {
	spec, ok := t.spec(specID)
	if !ok {
		return nil, fmt.Errorf("partition_spec_id %d is not a spec of the table", specID)
	}
	return DecodePartition(raw, spec, SchemasSourceType(t.Schemas))
}

// ToDeleteFile decodes a delete file reference, checking its shape.
func ToDeleteFile(what string, ref *pushdown_pb.DeleteFileRef, t *Table) (deletes.File, error) {
	bad := func(format string, args ...any) error {
		return perr.New(perr.InvalidArgument, "%s %s: %s", what, ref.GetPath(), fmt.Sprintf(format, args...))
	}
	if ref.GetPath() == "" {
		return deletes.File{}, perr.New(perr.InvalidArgument, "%s: path is empty", what)
	}
	if _, err := fileread.FilerPath(ref.GetPath()); err != nil {
		return deletes.File{}, bad("%v", err)
	}
	content, ok := ContentOf(ref.GetContent())
	if !ok {
		return deletes.File{}, bad("content %s: want POSITION_DELETES or EQUALITY_DELETES", ref.GetContent())
	}
	format, ok := FormatOf(ref.GetFileFormat())
	if !ok {
		return deletes.File{}, bad("file_format %s is not a file format", ref.GetFileFormat())
	}
	f := deletes.File{Path: ref.GetPath(), Size: ref.GetSizeBytes(), RecordCount: ref.GetRecordCount(), Content: content, Format: format,
		SpecID: ref.GetPartitionSpecId(), DataSeq: ref.GetDataSequenceNumber(), ReferencedDataFile: ref.GetReferencedDataFile(),
		BlobOffset: ref.GetBlobOffset(), BlobLength: ref.GetBlobLength()}
	for _, id := range ref.GetEqualityFieldIds() {
		f.EqualityFieldIDs = append(f.EqualityFieldIDs, int(id))
	}
	switch {
	case f.Size < 0:
		return deletes.File{}, bad("size_bytes %d is negative", f.Size)
	case f.DataSeq < 0:
		return deletes.File{}, bad("data_sequence_number %d is negative", f.DataSeq)
	case content == deletes.EqualityDeletes && len(f.EqualityFieldIDs) == 0:
		return deletes.File{}, bad("equality deletes without equality_field_ids")
	case content == deletes.EqualityDeletes && format == deletes.FormatPuffin:
		return deletes.File{}, bad("equality deletes cannot be a Puffin file")
	case f.IsDV() && (f.BlobOffset < 0 || f.BlobLength <= 0):
		return deletes.File{}, bad("deletion vector needs blob_offset >= 0 and blob_length > 0 (got %d, %d)", f.BlobOffset, f.BlobLength)
	case f.IsDV() && f.Size > 0 && f.BlobOffset+f.BlobLength > f.Size:
		return deletes.File{}, bad("deletion vector blob [%d, %d) lies past the file's %d bytes", f.BlobOffset, f.BlobOffset+f.BlobLength, f.Size)
	}
	if t != nil {
		schemas := SchemasSourceType(t.Schemas)
		for _, id := range f.EqualityFieldIDs {
			if _, ok := schemas(id); !ok {
				return deletes.File{}, bad("equality field id %d is in no schema of the table", id)
			}
		}
		p, err := t.decodePartition(f.SpecID, ref.GetPartitionValues())
		if err != nil {
			return deletes.File{}, bad("%v", err)
		}
		f.Partition = p
	}
	return f, nil
}
