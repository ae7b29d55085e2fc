package deletes

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
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
		p, err := EncodeStored("key-1", b, testStoreKey)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := DecodeStored("key-1", p, testStoreKey)
		if !ok || !got.Equals(b) {
			t.Fatalf("round trip of %v failed (ok=%v)", b.GetCardinality(), ok)
		}
	}
}

func TestStoredPayloadForAnotherKeyReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("position|v1|a|b", sampleBitmap(), testStoreKey)
	for _, k := range []string{"position|v1|a|c", "position|v1|a|b ", "", "position|v1|a"} {
		if _, ok := DecodeStored(k, p, testStoreKey); ok {
			t.Fatalf("payload for another key accepted under %q", k)
		}
	}
}

func TestEveryFlippedByteOfAStoredPayloadReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("k", sampleBitmap(), testStoreKey)
	for i := range p {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			q := slices.Clone(p)
			q[i] ^= x
			if _, ok := DecodeStored("k", q, testStoreKey); ok {
				t.Fatalf("flipping byte %d by %02x went unnoticed", i, x)
			}
		}
	}
	for n := 0; n < len(p); n++ {
		if _, ok := DecodeStored("k", p[:n], testStoreKey); ok {
			t.Fatalf("truncation to %d bytes went unnoticed", n)
		}
	}
	if _, ok := DecodeStored("k", append(slices.Clone(p), 0), testStoreKey); ok {
		t.Fatal("a trailing byte went unnoticed")
	}
}

func TestStoredPayloadOfAnotherVersionReadsAsAbsent(t *testing.T) {
	p, _ := EncodeStored("k", sampleBitmap(), testStoreKey)
	q := slices.Clone(p[:len(p)-sha256.Size])
	q[4] = storedVersion + 1
	q = append(q, storedMAC(testStoreKey, q)...)
	if _, ok := DecodeStored("k", q, testStoreKey); ok {
		t.Fatal("a payload of another version was accepted")
	}
}

func TestStoredPayloadLayoutIsMagicVersionKeyBitmapHMAC(t *testing.T) {
	b := bitmapOf(5)
	p, _ := EncodeStored("abc", b, testStoreKey)
	var bm bytes.Buffer
	b.WriteTo(&bm)
	want := append([]byte("LWDB\x02\x03abc"), byte(bm.Len()))
	want = append(want, bm.Bytes()...)
	m := hmac.New(sha256.New, testStoreKey)
	m.Write(want)
	want = m.Sum(want)
	if !bytes.Equal(p, want) {
		t.Fatalf("payload\n% x\nwant\n% x", p, want)
	}
}

// A bitmap written into a data file's .index/ folder by anyone who can
// write the table bucket — the version 1 layout with its CRC recomputed,
// or the current one sealed with another key — reads as absent: it would
// delete rows. Without a store key nothing is sealed or trusted.
func TestAStoredBitmapNotSealedWithTheStoreKeyReadsAsAbsent(t *testing.T) {
	forged := bitmapOf(1, 2, 3, 4242)
	var bm bytes.Buffer
	forged.WriteTo(&bm)
	v1 := append([]byte("LWDB\x01\x01k"), byte(bm.Len()))
	v1 = append(v1, bm.Bytes()...)
	v1 = binary.BigEndian.AppendUint32(v1, crc32.ChecksumIEEE(v1))
	if _, ok := DecodeStored("k", v1, testStoreKey); ok {
		t.Fatal("a version 1 payload with a recomputed CRC was trusted")
	}
	other, err := EncodeStored("k", forged, []byte("another cluster's store key....."))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := DecodeStored("k", other, testStoreKey); ok {
		t.Fatal("a payload sealed with another key was trusted")
	}
	if got, ok := DecodeStored("k", other, []byte("another cluster's store key.....")); !ok || !got.Equals(forged) {
		t.Fatal("the payload does not open under its own key: the test proves nothing")
	}
	if _, err := EncodeStored("k", forged, nil); err == nil {
		t.Fatal("a payload was sealed without a key")
	}
	good, _ := EncodeStored("k", forged, testStoreKey)
	if _, ok := DecodeStored("k", good, nil); ok {
		t.Fatal("a payload was trusted without a key")
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
