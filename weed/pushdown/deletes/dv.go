package deletes

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// Deletion vectors: a Puffin blob of type deletion-vector-v1,
//
//	[4-byte big-endian length of magic+bitmap][magic D1 D3 39 64][portable roaring64][4-byte big-endian CRC-32 of magic+bitmap]
//
// and the portable 64-bit roaring format inside it:
//
//	[8-byte little-endian count] { [4-byte little-endian key][32-bit portable roaring bitmap] } (keys ascending)
//
// A position is key<<32 | low.

// MaxDVKey is the largest 32-bit key a deletion vector may hold: Java's
// RoaringPositionBitmap stores bitmaps in an array indexed by a signed int
// key and refuses keys outside [0, Integer.MAX_VALUE-1] when it reads one
// (pyiceberg, Trino and iceberg-cpp do the same). iceberg-go v0.7.0's
// DeserializeRoaringPositionBitmap does not check keys at all: it would
// accept 64maphighvals.bin, which the Java reader — the reference — refuses.
const MaxDVKey = math.MaxInt32 - 1

// MaxDVPosition is the largest row position a deletion vector read here
// may hold: the last position of key MaxDVKey. (Java's writer refuses to
// set positions above (MaxDVKey<<32)|0x80000000, a bound its reader does
// not re-check; we check what the reader checks.)
const MaxDVPosition = uint64(MaxDVKey)<<32 | math.MaxUint32

// MaxDVBlobBytes bounds the blob a deletion vector may occupy (iceberg-go's
// puffin.DefaultMaxBlobSize).
const MaxDVBlobBytes = 256 << 20

// puffinMagic begins (and ends) every Puffin file.
const puffinMagic = "PFA1"

// dvMagic is the deletion-vector-v1 magic, as stored.
var dvMagic = [4]byte{0xD1, 0xD3, 0x39, 0x64}

// DVOptions tunes DecodeDV and ReadDV.
type DVOptions struct {
	// AllowBare accepts a blob that is a bare portable roaring64 bitmap
	// without the deletion-vector-v1 framing (older writers produced these).
	AllowBare bool
	// ExpectedCardinality is the manifest entry's record_count; < 0 skips
	// the check.
	ExpectedCardinality int64
}

// errBare is the message of a refused bare blob.
const errBare = "looks like a bare portable roaring64 bitmap without the deletion-vector-v1 framing (length, magic, CRC); " +
	"they are read only where bare deletion vectors are allowed (the catalog flag -pushdown.allowBareDeletionVectors; DVOptions.AllowBare, Options.AllowBareDV)"

// DecodeDV decodes a deletion-vector-v1 blob into the deleted positions.
// The length, magic and CRC are checked, keys above MaxDVKey are refused,
// and with o.ExpectedCardinality >= 0 the cardinality must equal it.
func DecodeDV(blob []byte, o DVOptions) (bm *roaring64.Bitmap, err error) {
	framed := len(blob) >= 12 && binary.BigEndian.Uint32(blob) == uint32(len(blob)-8) && bytes.Equal(blob[4:8], dvMagic[:])
	if !framed {
		bare, bareErr := decodePortable(blob, MaxDVKey)
		var be *boundsError
		switch {
		case bareErr == nil && !o.AllowBare:
			return nil, perr.New(perr.FailedPrecondition, "deletion vector blob of %d bytes %s", len(blob), errBare)
		case bareErr == nil:
			if err := checkCardinality(bare, o.ExpectedCardinality); err != nil {
				return nil, err
			}
			return bare, nil
		case errors.As(bareErr, &be):
			return nil, perr.New(perr.Corrupt, "%w (in a blob without the deletion-vector-v1 framing)", bareErr)
		case len(blob) < 12:
			return nil, perr.New(perr.Corrupt, "deletion vector blob is %d bytes, shorter than the 12-byte deletion-vector-v1 framing", len(blob))
		case binary.BigEndian.Uint32(blob) != uint32(len(blob)-8):
			return nil, perr.New(perr.Corrupt, "deletion vector length mismatch: the length field says %d bytes of magic+bitmap, the blob holds %d",
				binary.BigEndian.Uint32(blob), len(blob)-8)
		default:
			return nil, perr.New(perr.Corrupt, "deletion vector magic mismatch: got % X, want % X", blob[4:8], dvMagic[:])
		}
	}
	body := blob[4 : len(blob)-4]
	if got, want := crc32.ChecksumIEEE(body), binary.BigEndian.Uint32(blob[len(blob)-4:]); got != want {
		return nil, perr.New(perr.Corrupt, "deletion vector CRC-32 mismatch: computed %08x over magic+bitmap, the blob stores %08x", got, want)
	}
	bm, err = decodePortable(body[4:], MaxDVKey)
	if err != nil {
		return nil, err
	}
	if err := checkCardinality(bm, o.ExpectedCardinality); err != nil {
		return nil, err
	}
	return bm, nil
}

func checkCardinality(bm *roaring64.Bitmap, want int64) error {
	if want >= 0 && bm.GetCardinality() != uint64(want) {
		return perr.New(perr.Corrupt, "deletion vector cardinality mismatch: the bitmap holds %d positions, the manifest record_count says %d",
			bm.GetCardinality(), want)
	}
	return nil
}

// DecodePortableRoaring64 decodes a portable 64-bit roaring bitmap. Any
// 32-bit key is accepted (DecodeDV bounds keys); keys must ascend and every
// byte must be used.
func DecodePortableRoaring64(b []byte) (*roaring64.Bitmap, error) {
	return decodePortable(b, math.MaxUint32)
}

// minBitmap32Bytes is the smallest 32-bit portable roaring bitmap (cookie +
// container count), so a count can be bounded before anything is allocated.
const minBitmap32Bytes = 8

// decodePortable validates b as a portable roaring64 bitmap with keys <=
// maxKey, then builds the bitmap. It never panics: malformed input that
// slips past the checks and trips the roaring library is reported as
// corrupt.
func decodePortable(b []byte, maxKey uint32) (bm *roaring64.Bitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, perr.New(perr.Corrupt, "roaring bitmap is malformed (decoder panicked: %v)", r)
		}
	}()
	if len(b) < 8 {
		return nil, perr.New(perr.Corrupt, "roaring bitmap is %d bytes, shorter than its 8-byte bitmap count", len(b))
	}
	count := binary.LittleEndian.Uint64(b)
	if count > uint64(len(b)-8)/(4+minBitmap32Bytes) {
		return nil, perr.New(perr.Corrupt, "roaring bitmap count %d cannot fit in %d bytes", count, len(b))
	}
	off := 8
	var last uint32
	var empties int
	type part struct{ start, end int } // a key and its bitmap, in b
	parts := make([]part, 0, count)
	for i := uint64(0); i < count; i++ {
		if len(b)-off < 4 {
			return nil, perr.New(perr.Corrupt, "roaring bitmap truncated reading key %d at byte %d", i, off)
		}
		key := binary.LittleEndian.Uint32(b[off:])
		off += 4
		if key > maxKey {
			return nil, &perr.Error{Kind: perr.Corrupt, Err: &boundsError{key: key, maxKey: maxKey}}
		}
		if i > 0 && key <= last {
			return nil, perr.New(perr.Corrupt, "roaring bitmap keys must ascend: key %d follows %d", key, last)
		}
		last = key
		inner := roaring.New()
		n, err := inner.ReadFrom(bytes.NewReader(b[off:]))
		if err != nil || n <= 0 {
			return nil, perr.New(perr.Corrupt, "roaring bitmap for key %d at byte %d is malformed: %v", key, off, errOr(err, "empty"))
		}
		if err := inner.Validate(); err != nil {
			return nil, perr.New(perr.Corrupt, "roaring bitmap for key %d at byte %d is malformed: %v", key, off, err)
		}
		if inner.IsEmpty() {
			empties++
		} else {
			parts = append(parts, part{off - 4, off + int(n)})
		}
		off += int(n)
	}
	if off != len(b) {
		return nil, perr.New(perr.Corrupt, "roaring bitmap has %d trailing bytes after %d bitmaps", len(b)-off, count)
	}
	if empties > 0 {
		// roaring64 misbehaves on empty containers (Maximum panics): drop them.
		clean := binary.LittleEndian.AppendUint64(make([]byte, 0, len(b)), uint64(len(parts)))
		for _, p := range parts {
			clean = append(clean, b[p.start:p.end]...)
		}
		b = clean
	}
	if len(b) == 0 {
		return nil, perr.New(perr.Corrupt, "roaring bitmap is malformed: no bytes")
	}
	if bm, err = rowbits.Decode(b); err != nil {
		return nil, perr.New(perr.Corrupt, "roaring bitmap is malformed: %v", err)
	}
	return bm, nil
}

// boundsError is a key above the largest one Iceberg allows.
type boundsError struct{ key, maxKey uint32 }

func (e *boundsError) Error() string {
	return fmt.Sprintf("deletion vector position %d (key %d) exceeds the maximum position %d (key %d, Java's Integer.MAX_VALUE-1)",
		uint64(e.key)<<32, e.key, uint64(e.maxKey)<<32|math.MaxUint32, e.maxKey)
}

func errOr(err error, s string) any {
	if err != nil {
		return err
	}
	return s
}

// ReadDV reads and decodes the deletion vector f with one ranged read of
// [BlobOffset, BlobOffset+BlobLength). It does not read the Puffin footer:
// the manifest's offset, length and record_count identify and check the
// blob (with o.ExpectedCardinality, usually f.RecordCount). A blob offset
// below 4 cannot be inside a Puffin file (its magic comes first) and is
// refused unless o.AllowBare. (iceberg-go additionally reads the footer
// and checks the blob's type, referenced-data-file and cardinality
// properties; we trade that for a single read, keeping length, magic, CRC,
// bounds and the manifest cardinality.)
func ReadDV(ctx context.Context, open Opener, f File, o DVOptions) (*roaring64.Bitmap, error) {
	if f.Format != FormatPuffin {
		return nil, perr.New(perr.InvalidArgument, "deletion vector %s: format is %s, not PUFFIN", f.Path, f.Format)
	}
	if f.Content != PositionDeletes {
		return nil, perr.New(perr.FailedPrecondition, "deletion vector %s: Puffin files with %s are not supported", f.Path, f.Content)
	}
	if f.BlobOffset < 0 || f.BlobLength <= 0 || f.BlobLength > MaxDVBlobBytes {
		return nil, perr.New(perr.InvalidArgument, "deletion vector %s: blob range offset %d length %d is invalid (length must be in 1..%d)",
			f.Path, f.BlobOffset, f.BlobLength, MaxDVBlobBytes)
	}
	if f.BlobOffset < int64(len(puffinMagic)) && !o.AllowBare {
		// A Puffin file begins with its 4-byte magic, so no blob starts
		// before offset 4: this "Puffin" file is a bare blob.
		return nil, perr.New(perr.FailedPrecondition, "deletion vector %s: blob offset %d precedes the 4-byte Puffin magic, so the file is not a Puffin container "+
			"(a deletion vector written without the Puffin framing); it is read only where bare deletion vectors are allowed (the catalog flag -pushdown.allowBareDeletionVectors; Options.AllowBareDV)", f.Path, f.BlobOffset)
	}
	src, err := openChecked(ctx, open, f.Path, f.Size)
	if err != nil {
		return nil, err
	}
	if f.BlobOffset > src.Size() || f.BlobLength > src.Size()-f.BlobOffset {
		return nil, perr.New(perr.Corrupt, "deletion vector %s: blob [%d, %d) lies beyond the file's %d bytes",
			f.Path, f.BlobOffset, f.BlobOffset+f.BlobLength, src.Size())
	}
	blob := make([]byte, f.BlobLength)
	if err := readFull(ctx, src, blob, f.BlobOffset); err != nil {
		return nil, wrapIO(err, "deletion vector %s: read blob [%d, %d)", f.Path, f.BlobOffset, f.BlobOffset+f.BlobLength)
	}
	bm, err := DecodeDV(blob, o)
	if err != nil {
		return nil, perr.Wrap(perr.Corrupt, fmt.Errorf("deletion vector %s blob [%d, %d): %w", f.Path, f.BlobOffset, f.BlobOffset+f.BlobLength, err))
	}
	return bm, nil
}

// openChecked opens path and, when size > 0, refuses a file of another
// size (the manifest names immutable bytes).
func openChecked(ctx context.Context, open Opener, path string, size int64) (Source, error) {
	if open == nil {
		return nil, perr.New(perr.InvalidArgument, "deletes: no opener to read %s", path)
	}
	src, err := open(ctx, path)
	if err != nil {
		if perr.IsContext(err) {
			return nil, err
		}
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("open %s: %w", path, err))
	}
	if src == nil {
		return nil, perr.New(perr.Unavailable, "open %s: the opener returned no source", path)
	}
	if size > 0 && src.Size() != size {
		return nil, perr.New(perr.FailedPrecondition, "%s is %d bytes, the manifest says %d: the file changed", path, src.Size(), size)
	}
	return src, nil
}

// readFull reads len(p) bytes at off.
func readFull(ctx context.Context, src Source, p []byte, off int64) error {
	n, err := src.ReadAt(ctx, p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// wrapIO gives an I/O failure a message naming the file; cancellations
// keep their identity.
func wrapIO(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if perr.IsContext(err) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return perr.New(perr.Corrupt, "%s: %w", msg, err)
	}
	return perr.Wrap(perr.Unavailable, fmt.Errorf("%s: %w", msg, err))
}
