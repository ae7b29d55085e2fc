package deletes

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func sampleBitmap() *roaring64.Bitmap {
	b := bitmapOf(0, 1, 7, 65535, 65536, 1<<32, 1<<40)
	b.AddRange(1000, 5000)
	return b
}

func TestStoredPayloadRoundTrips(t *testing.T) {
	for _, b := range []*roaring64.Bitmap{roaring64.New(), bitmapOf(3), sampleBitmap()} {
		p, err := EncodeStored("key-1", b)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := DecodeStored("key-1", p)
		if !ok || !got.Equals(b) {
			t.Fatalf("round trip of %v failed (ok=%v)", b.GetCardinality(), ok)
		}
	}
}

func TestStoredPayloadForAnotherKeyReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("position|v1|a|b", sampleBitmap())
	for _, k := range []string{"position|v1|a|c", "position|v1|a|b ", "", "position|v1|a"} {
		if _, ok := DecodeStored(k, p); ok {
			t.Fatalf("payload for another key accepted under %q", k)
		}
	}
}

func TestEveryFlippedByteOfAStoredPayloadReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("k", sampleBitmap())
	for i := range p {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			q := slices.Clone(p)
			q[i] ^= x
			if _, ok := DecodeStored("k", q); ok {
				t.Fatalf("flipping byte %d by %02x went unnoticed", i, x)
			}
		}
	}
	for n := 0; n < len(p); n++ {
		if _, ok := DecodeStored("k", p[:n]); ok {
			t.Fatalf("truncation to %d bytes went unnoticed", n)
		}
	}
	if _, ok := DecodeStored("k", append(slices.Clone(p), 0)); ok {
		t.Fatal("a trailing byte went unnoticed")
	}
}

func TestStoredPayloadOfAnotherVersionReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("k", sampleBitmap())
	q := slices.Clone(p[:len(p)-4])
	q[4] = storedVersion + 1
	q = binary.BigEndian.AppendUint32(q, crc32.ChecksumIEEE(q))
	if _, ok := DecodeStored("k", q); ok {
		t.Fatal("a payload of another version was accepted")
	}
}

func TestStoredPayloadLayoutIsMagicVersionKeyBitmapCRC(t *testing.T) {
	b := bitmapOf(5)
	p, _ := EncodeStored("abc", b)
	var bm bytes.Buffer
	b.WriteTo(&bm)
	want := append([]byte("LWDB\x01\x03abc"), byte(bm.Len()))
	want = append(want, bm.Bytes()...)
	want = binary.BigEndian.AppendUint32(want, crc32.ChecksumIEEE(want))
	if !bytes.Equal(p, want) {
		t.Fatalf("payload\n% x\nwant\n% x", p, want)
	}
}

func TestEqualityStoreNamesAreStableAndDistinct(t *testing.T) {
	a := EqualityStoreName(File{Path: "s3://b/e1.parquet", Size: 10})
	b := EqualityStoreName(File{Path: "s3://b/e1.parquet", Size: 11})
	if a == b || !strings.HasPrefix(a, "deletes.equality.") || !strings.HasSuffix(a, ".bitmap") || len(a) != len("deletes.equality.")+32+len(".bitmap") {
		t.Fatalf("names %q, %q", a, b)
	}
	if a != EqualityStoreName(File{Path: "s3://b/e1.parquet", Size: 10}) {
		t.Fatal("names are not stable")
	}
}

func TestIdentitiesAreUnambiguous(t *testing.T) {
	ids := map[string]File{}
	for _, f := range []File{
		{Path: "a", Size: 1, Content: PositionDeletes, Format: FormatParquet},
		{Path: "a", Size: 2, Content: PositionDeletes, Format: FormatParquet},
		{Path: "a#1", Size: 1, Content: PositionDeletes, Format: FormatParquet},
		{Path: "a", Size: 1, Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 4, BlobLength: 10},
		{Path: "a", Size: 1, Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 4, BlobLength: 11},
		{Path: "a", Size: 1, Content: PositionDeletes, Format: FormatPuffin, BlobOffset: 41, BlobLength: 1},
	} {
		if g, dup := ids[f.Identity()]; dup {
			t.Fatalf("%+v and %+v share identity %q", g, f, f.Identity())
		}
		ids[f.Identity()] = f
	}
	if got := (DataFile{Size: 1234, RecordCount: 56}).Identity(); got != "1234-56" {
		t.Fatalf("DataFile.Identity = %q", got)
	}
}

// seedCorpus adds the golden bitmaps, when present, to a fuzz corpus.
func seedGolden(f *testing.F) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "testdata", "iceberg-dv")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			f.Add(b)
		}
	}
}
