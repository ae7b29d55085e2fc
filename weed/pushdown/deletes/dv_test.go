package deletes

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/klauspost/compress/zstd"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// p is the README's P(b, c, v) = b * 2^32 + c * 65536 + v.
func p(b, c, v uint64) uint64 { return b<<32 + c*65536 + v }

func span(lo, hi uint64) []uint64 {
	var out []uint64
	for x := lo; x < hi; x++ {
		out = append(out, x)
	}
	return out
}

func goldenDVs() map[string][]uint64 {
	all := []uint64{p(0, 0, 5), p(0, 0, 7)}
	all = append(all, span(p(0, 1, 1), p(0, 1, 1000))...)
	all = append(all, span(p(0, 2, 1), p(0, 2, 65535))...)
	all = append(all, p(1, 0, 10), p(1, 0, 20))
	all = append(all, span(p(1, 1, 10), p(1, 1, 500))...)
	all = append(all, span(p(1, 2, 1), p(1, 2, 65535))...)
	return map[string][]uint64{
		"empty-position-index.bin":                    nil,
		"small-alternating-values-position-index.bin": {1, 3, 5, 7, 9},
		"small-and-large-values-position-index.bin":   {100, 101, 2147483747, 2147483748},
		"all-container-types-position-index.bin":      all,
	}
}

// inPuffin places a blob in a file after the Puffin magic, as a Puffin
// writer does, and describes it as a deletion vector of card positions.
func inPuffin(fs *memFS, path string, blob []byte, card int64) File {
	file := append([]byte(puffinMagic), blob...)
	file = append(file, puffinMagic...)
	fs.put(path, file)
	return File{Path: path, Size: int64(len(file)), RecordCount: card, Content: PositionDeletes, Format: FormatPuffin,
		BlobOffset: int64(len(puffinMagic)), BlobLength: int64(len(blob)), ReferencedDataFile: "data.parquet"}
}

// readGolden reads a golden blob, changed by mutate, as the deletion
// vector of a Puffin file named after it.
func readGolden(t *testing.T, name string, mutate func([]byte) []byte, card int64) (*roaring64.Bitmap, string, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedTestdata(t, "iceberg-dv"), name))
	if err != nil {
		t.Fatal(err)
	}
	fs := newMemFS()
	path := "s3://warehouse/golden/" + name + ".puffin"
	f := inPuffin(fs, path, mutate(slices.Clone(b)), card)
	bm, err := ReadDV(context.Background(), fs.open, f, DVOptions{ExpectedCardinality: card})
	return bm, path, err
}

func same(b []byte) []byte { return b }

func TestGoldenDeletionVectorsDecodeToExactlyTheDocumentedPositions(t *testing.T) {
	for name, want := range goldenDVs() {
		t.Run(name, func(t *testing.T) {
			bm, _, err := readGolden(t, name, same, int64(len(want)))
			if err != nil {
				t.Fatal(err)
			}
			sameBitmap(t, name, bm, want)
		})
	}
}

func TestGoldenDeletionVectorWithAWrongCardinalityIsRefused(t *testing.T) {
	_, path, err := readGolden(t, "small-alternating-values-position-index.bin", same, 4)
	errContains(t, err, "cardinality", "5", "4", path)
}

func TestDeletionVectorWithOneFlippedCRCByteIsRefusedNamingCRCAndTheFile(t *testing.T) {
	_, path, err := readGolden(t, "small-and-large-values-position-index.bin", func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }, -1)
	errContains(t, err, "CRC", path)
	if perr.KindOf(err) != perr.Corrupt {
		t.Fatalf("kind %v, want corrupt", perr.KindOf(err))
	}
}

func TestDeletionVectorWithAFlippedBitmapByteFailsTheCRC(t *testing.T) {
	_, path, err := readGolden(t, "all-container-types-position-index.bin", func(b []byte) []byte { b[20] ^= 0x40; return b }, -1)
	errContains(t, err, "CRC", path)
}

func TestDeletionVectorWithAWrongLengthFieldIsRefused(t *testing.T) {
	_, path, err := readGolden(t, "small-alternating-values-position-index.bin", func(b []byte) []byte {
		binary.BigEndian.PutUint32(b, binary.BigEndian.Uint32(b)+1)
		return b
	}, -1)
	errContains(t, err, "length mismatch", path)
}

func TestDeletionVectorWithAWrongMagicIsRefused(t *testing.T) {
	_, path, err := readGolden(t, "small-alternating-values-position-index.bin", func(b []byte) []byte { b[5] = 0x00; return b }, -1)
	errContains(t, err, "magic mismatch", path)
}

func TestTruncatedDeletionVectorIsRefused(t *testing.T) {
	_, path, err := readGolden(t, "small-alternating-values-position-index.bin", func(b []byte) []byte { return b[:len(b)-3] }, -1)
	errContains(t, err, path)
}

func TestADeletionVectorFileThatIsNotAPuffinContainerIsRefusedUnlessAllowed(t *testing.T) {
	// The legacy table's "Puffin" file is a bare deletion-vector blob at
	// offset 0 (its manifest says offset 0, length 42, record_count 1).
	dir := sharedTestdata(t, "iceberg-tables/legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector/data")
	path := filepath.Join(dir, "legacy-bare-deletion-vector.puffin")
	f := File{Path: path, Size: 42, RecordCount: 1, Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 0, BlobLength: 42,
		ReferencedDataFile: "data/00000-0-cac6cfea-266f-44f8-9a3a-70dd8fb68014.parquet"}
	_, err := ReadDV(context.Background(), osOpen, f, DVOptions{ExpectedCardinality: 1})
	errContains(t, err, path, "not a Puffin container", "AllowBare")
	if perr.KindOf(err) != perr.FailedPrecondition {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
	bm, err := ReadDV(context.Background(), osOpen, f, DVOptions{AllowBare: true, ExpectedCardinality: 1})
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "legacy DV", bm, []uint64{1})
}

func TestHighValuesBitmapIsRefusedByTheExplicitPositionBound(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sharedTestdata(t, "iceberg-dv"), "64maphighvals.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// As a bare blob (allowed or not) and inside a valid DV framing.
	_, err = DecodeDV(b, DVOptions{AllowBare: true, ExpectedCardinality: -1})
	errContains(t, err, "exceeds the maximum position")
	_, err = DecodeDV(b, DVOptions{ExpectedCardinality: -1})
	errContains(t, err, "exceeds the maximum position")
	_, err = DecodeDV(frameDV(b), DVOptions{ExpectedCardinality: -1})
	errContains(t, err, "exceeds the maximum position")
	if perr.KindOf(err) != perr.Corrupt {
		t.Fatalf("kind %v, want corrupt", perr.KindOf(err))
	}
}

func TestKeyJustAboveTheMaximumIsRefusedAndTheMaximumKeyIsAccepted(t *testing.T) {
	ok := bitmapOf(MaxDVPosition, uint64(MaxDVKey)<<32)
	var buf bytes.Buffer
	if _, err := ok.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDV(frameDV(buf.Bytes()), DVOptions{ExpectedCardinality: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "max key", got, []uint64{MaxDVPosition, uint64(MaxDVKey) << 32})

	bad := bitmapOf(uint64(MaxDVKey+1) << 32)
	buf.Reset()
	if _, err := bad.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	_, err = DecodeDV(frameDV(buf.Bytes()), DVOptions{ExpectedCardinality: -1})
	errContains(t, err, "exceeds the maximum position", "2147483647")
}

// frameDV wraps a portable roaring64 bitmap in deletion-vector-v1 framing.
func frameDV(bitmap []byte) []byte {
	body := append(slices.Clone(dvMagic[:]), bitmap...)
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	out = append(out, body...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
}

func TestBareRoaringBitmapsDecodeOnlyWhenAllowed(t *testing.T) {
	dir := sharedTestdata(t, "iceberg-dv")
	for _, name := range []string{"64mapempty.bin", "64map32bitvals.bin", "64mapspreadvals.bin"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			// iceberg-go's independent decoder is the reference.
			ref, err := dv.DeserializeRoaringPositionBitmap(b)
			if err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for p := range ref.Positions() {
				want = append(want, p)
			}
			got, err := DecodePortableRoaring64(b)
			if err != nil {
				t.Fatal(err)
			}
			sameBitmap(t, "portable", got, want)
			bare, err := DecodeDV(b, DVOptions{AllowBare: true, ExpectedCardinality: int64(len(want))})
			if err != nil {
				t.Fatal(err)
			}
			sameBitmap(t, "bare DV", bare, want)
			_, err = DecodeDV(b, DVOptions{ExpectedCardinality: -1})
			errContains(t, err, "looks like a bare portable roaring64 bitmap without the deletion-vector-v1 framing", "AllowBare")
			if perr.KindOf(err) != perr.FailedPrecondition {
				t.Fatalf("kind %v, want failed precondition", perr.KindOf(err))
			}
		})
	}
}

func TestRoaringSpecExamplesHoldTheirDocumentedValues(t *testing.T) {
	dir := sharedTestdata(t, "iceberg-dv")
	b, err := os.ReadFile(filepath.Join(dir, "64map32bitvals.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePortableRoaring64(b)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "64map32bitvals", got, span(0, 10))
}

func TestPuffinSpecExamplesReadThroughIcebergGosReader(t *testing.T) {
	dir := sharedTestdata(t, "iceberg-dv")
	const second = "some blob \u0000 binary data 🤯 that is not very very very very very very long, is it?"
	open := func(name string) *puffin.Reader {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		r, err := puffin.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if n := len(open("puffin-empty-puffin-uncompressed.bin").Blobs()); n != 0 {
		t.Fatalf("empty puffin has %d blobs", n)
	}
	r := open("puffin-sample-metric-data-uncompressed.bin")
	blobs, err := r.ReadAllBlobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 2 || string(blobs[0].Data) != "abcdefghi" || string(blobs[1].Data) != second || blobs[1].Metadata.Type != "some-other-blob" {
		t.Fatalf("uncompressed blobs: %+v", blobs)
	}
	// iceberg-go's reader refuses compressed blobs; its footer still
	// locates them, and zstd decodes their bytes.
	z := open("puffin-sample-metric-data-compressed-zstd.bin")
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var texts []string
	for _, m := range z.Blobs() {
		if m.CompressionCodec == nil || *m.CompressionCodec != "zstd" {
			t.Fatalf("blob %+v is not zstd", m)
		}
		raw := make([]byte, m.Length)
		if _, err := z.ReadAt(raw, m.Offset); err != nil {
			t.Fatal(err)
		}
		plain, err := dec.DecodeAll(raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(plain))
	}
	if !slices.Equal(texts, []string{"abcdefghi", second}) {
		t.Fatalf("zstd blobs: %q", texts)
	}
}

func TestDeletionVectorsWrittenByIcebergGoDecodeToTheirPositions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 30; round++ {
		ref := dv.NewRoaringPositionBitmap()
		var want []uint64
		n := rng.IntN(1500)
		for i := 0; i < n; i++ {
			var p uint64
			switch rng.IntN(3) {
			case 0:
				p = uint64(rng.IntN(1000))
			case 1:
				p = uint64(rng.Int64N(1 << 34))
			default:
				start := uint64(rng.Int64N(1 << 33))
				ref.SetRange(start, start+uint64(rng.IntN(3000)))
				continue
			}
			ref.Set(p)
		}
		for p := range ref.Positions() {
			want = append(want, p)
		}
		blob, err := dv.SerializeDV(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeDV(blob, DVOptions{ExpectedCardinality: int64(len(want))})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sameBitmap(t, "iceberg-go DV", got, want)
	}
}

func TestReadDVMakesExactlyOneRangedReadOfTheBlob(t *testing.T) {
	blob, err := dv.SerializeDV(func() *dv.RoaringPositionBitmap {
		b := dv.NewRoaringPositionBitmap()
		b.Set(3)
		b.Set(1 << 33)
		return b
	}())
	if err != nil {
		t.Fatal(err)
	}
	prefix := bytes.Repeat([]byte{'P'}, 100)
	file := append(append(slices.Clone(prefix), blob...), bytes.Repeat([]byte{'F'}, 50)...)
	fs := newMemFS()
	fs.put("s3://b/t/data/x.puffin", file)
	f := File{Path: "s3://b/t/data/x.puffin", Size: int64(len(file)), RecordCount: 2, Content: PositionDeletes, Format: FormatPuffin,
		BlobOffset: int64(len(prefix)), BlobLength: int64(len(blob)), ReferencedDataFile: "d"}
	got, err := ReadDV(context.Background(), fs.open, f, DVOptions{ExpectedCardinality: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "dv", got, []uint64{3, 1 << 33})
	reads := *fs.reads[f.Path]
	if len(reads) != 1 || reads[0] != (readCall{off: f.BlobOffset, n: f.BlobLength}) {
		t.Fatalf("reads %+v, want one read of [%d, +%d)", reads, f.BlobOffset, f.BlobLength)
	}
}

func TestReadDVReportsBadRangesIOFailuresAndChangedFiles(t *testing.T) {
	fs := newMemFS()
	fs.put("x.puffin", make([]byte, 64))
	base := File{Path: "x.puffin", Size: 64, Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 60, BlobLength: 10}
	_, err := ReadDV(context.Background(), fs.open, base, DVOptions{})
	errContains(t, err, "x.puffin", "beyond")
	if perr.KindOf(err) != perr.Corrupt {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
	changed := base
	changed.Size, changed.BlobOffset, changed.BlobLength = 65, 4, 12
	_, err = ReadDV(context.Background(), fs.open, changed, DVOptions{})
	if perr.KindOf(err) != perr.FailedPrecondition {
		t.Fatalf("changed file: %v (kind %v)", err, perr.KindOf(err))
	}
	failing := func(ctx context.Context, path string) (Source, error) {
		return memSource{data: make([]byte, 64), fail: errInjected}, nil
	}
	ok := base
	ok.BlobOffset, ok.BlobLength = 4, 12
	_, err = ReadDV(context.Background(), failing, ok, DVOptions{})
	if perr.KindOf(err) != perr.Unavailable {
		t.Fatalf("I/O failure: %v (kind %v)", err, perr.KindOf(err))
	}
	errContains(t, err, "x.puffin", "injected")
	_, err = ReadDV(context.Background(), fs.open, File{Path: "y.puffin", Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 4, BlobLength: 12}, DVOptions{})
	if perr.KindOf(err) != perr.Unavailable {
		t.Fatalf("missing file: %v (kind %v)", err, perr.KindOf(err))
	}
	_, err = ReadDV(context.Background(), fs.open, File{Path: "z.avro", Content: PositionDeletes, Format: FormatAvro, BlobLength: 12}, DVOptions{})
	if perr.KindOf(err) != perr.InvalidArgument {
		t.Fatalf("not a puffin: %v (kind %v)", err, perr.KindOf(err))
	}
}

func TestEmptyContainersAreDroppedSoTheBitmapIsSafeToUse(t *testing.T) {
	// Two keys; key 0's 32-bit bitmap is empty (cookie, no containers).
	empty32 := []byte{0x3a, 0x30, 0, 0, 0, 0, 0, 0}
	one := bitmapOf(uint64(1)<<32 | 9)
	var buf bytes.Buffer
	one.WriteTo(&buf)
	b := binary.LittleEndian.AppendUint64(nil, 2)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, empty32...)
	b = append(b, buf.Bytes()[8:]...) // key 1 and its bitmap
	got, err := DecodeDV(frameDV(b), DVOptions{ExpectedCardinality: 1})
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "without the empty container", got, []uint64{1<<32 | 9})
	if got.Minimum() != 1<<32|9 || got.Maximum() != 1<<32|9 {
		t.Fatal("min/max wrong")
	}
}
