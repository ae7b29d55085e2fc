package deletes

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Content is what a delete file holds, numbered like Iceberg's manifest
// content field.
type Content int

const (
	PositionDeletes Content = 1 // (file_path, pos) rows, or a deletion vector
	EqualityDeletes Content = 2 // rows of equality-key values
)

func (c Content) String() string {
	switch c {
	case PositionDeletes:
		return "position deletes"
	case EqualityDeletes:
		return "equality deletes"
	}
	return "content(" + strconv.Itoa(int(c)) + ")"
}

// Format is a delete file's file format. The zero value is no format, so a
// File built without one is refused instead of read as Parquet by accident.
type Format int

const (
	FormatParquet Format = iota + 1
	FormatAvro
	FormatORC
	FormatPuffin
)

func (f Format) String() string {
	switch f {
	case FormatParquet:
		return "PARQUET"
	case FormatAvro:
		return "AVRO"
	case FormatORC:
		return "ORC"
	case FormatPuffin:
		return "PUFFIN"
	}
	return "format(" + strconv.Itoa(int(f)) + ")"
}

// File is one delete file as a manifest entry describes it.
type File struct {
	Path        string
	Size        int64 // file_size_in_bytes; 0 = unknown (not checked)
	RecordCount int64 // record_count; for a DV, its cardinality

	Content Content
	Format  Format

	SpecID    int32
	Partition map[int]any // partition field id → value as iceberg-go's DataFile.Partition() gives it

	DataSeq int64 // data sequence number; < 0 = unset

	EqualityFieldIDs []int

	// ReferencedDataFile is the one data file the deletes target, or "" when
	// they may target many. Set it the way iceberg-go does (see
	// ReferencedDataFileOf): the manifest's referenced_data_file, else the
	// file_path bounds when lower == upper.
	ReferencedDataFile string

	BlobOffset, BlobLength int64 // deletion vectors (Format == FormatPuffin)
}

// IsDV reports whether f is a deletion vector: a Puffin file with position
// delete content (iceberg-go's IsDeletionVector).
func (f File) IsDV() bool { return f.Format == FormatPuffin && f.Content == PositionDeletes }

// Identity is a stable, unambiguous string naming the immutable bytes f
// stands for: its path and size, plus the blob range for a deletion vector
// (one Puffin file holds many DVs).
func (f File) Identity() string {
	if f.IsDV() {
		return fmt.Sprintf("%q#%d@%d+%d", f.Path, f.Size, f.BlobOffset, f.BlobLength)
	}
	return fmt.Sprintf("%q#%d", f.Path, f.Size)
}

// DataFile is the data file deletes apply to.
type DataFile struct {
	Path              string
	Size, RecordCount int64
	SpecID            int32
	Partition         map[int]any
	DataSeq           int64
	// FooterHash is footer.Footer.Hash of the file as it is now (set by the
	// service after checking the file exists and matches Size and
	// RecordCount); "" = not checked, and nothing is persisted.
	FooterHash string
}

// Identity is footer.IdentityDir of the file, the <identity> directory
// name of its side indexes (<parent>/.index/<file_name>/<identity>/).
func (d DataFile) Identity() string {
	return footer.IdentityDir(d.Size, d.RecordCount, d.FooterHash)
}

// Source reads a file by ranges. ReadAt follows io.ReaderAt: it returns
// len(p) bytes or an error.
type Source interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	Size() int64
}

// Opener opens a file by its path as the manifest writes it.
type Opener func(ctx context.Context, path string) (Source, error)

// filePathFieldID and posFieldID are the reserved field ids of a position
// delete file's columns.
const (
	filePathFieldID = 2147483546
	posFieldID      = 2147483545
)

// ReferencedDataFileOf returns the single data file a position delete file
// targets, the way iceberg-go (and Java's ContentFileUtil.referencedDataFile)
// decide it: the manifest's referenced_data_file when set, else the
// file_path column's bounds when lower == upper, else "".
func ReferencedDataFileOf(explicit *string, lowerBounds, upperBounds map[int][]byte) string {
	if explicit != nil && *explicit != "" {
		return *explicit
	}
	lo, hi := lowerBounds[filePathFieldID], upperBounds[filePathFieldID]
	if len(lo) == 0 || !bytes.Equal(lo, hi) {
		return ""
	}
	return string(lo)
}

// FromIceberg describes an iceberg-go delete file with data sequence number
// dataSeq (the manifest entry's SequenceNum()).
func FromIceberg(df iceberg.DataFile, dataSeq int64) (File, error) {
	f := File{
		Path: df.FilePath(), Size: df.FileSizeBytes(), RecordCount: df.Count(),
		SpecID: df.SpecID(), Partition: df.Partition(), DataSeq: dataSeq,
		EqualityFieldIDs: df.EqualityFieldIDs(),
	}
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		f.Content = PositionDeletes
	case iceberg.EntryContentEqDeletes:
		f.Content = EqualityDeletes
	default:
		return File{}, perr.New(perr.InvalidArgument, "deletes: %s is not a delete file (content %s)", df.FilePath(), df.ContentType())
	}
	switch df.FileFormat() {
	case iceberg.ParquetFile:
		f.Format = FormatParquet
	case iceberg.AvroFile:
		f.Format = FormatAvro
	case iceberg.OrcFile:
		f.Format = FormatORC
	case iceberg.PuffinFile:
		f.Format = FormatPuffin
	default:
		return File{}, perr.New(perr.InvalidArgument, "deletes: %s has unknown file format %s", perr.Quote(df.FilePath()), perr.Quote(string(df.FileFormat())))
	}
	if f.Content == PositionDeletes {
		f.ReferencedDataFile = ReferencedDataFileOf(df.ReferencedDataFile(), df.LowerBoundValues(), df.UpperBoundValues())
	}
	if off := df.ContentOffset(); off != nil {
		f.BlobOffset = *off
	}
	if n := df.ContentSizeInBytes(); n != nil {
		f.BlobLength = *n
	}
	return f, nil
}

// DataFileFromIceberg describes an iceberg-go data file with data sequence
// number dataSeq.
func DataFileFromIceberg(df iceberg.DataFile, dataSeq int64) DataFile {
	return DataFile{Path: df.FilePath(), Size: df.FileSizeBytes(), RecordCount: df.Count(),
		SpecID: df.SpecID(), Partition: df.Partition(), DataSeq: dataSeq}
}
