package deletes

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// FuzzDecodeDV: DecodeDV and DecodePortableRoaring64 never panic, accept
// only in-bounds positions, and what they accept re-encodes to the same
// set.
func FuzzDecodeDV(f *testing.F) {
	seedGolden(f)
	for _, b := range []*roaring64.Bitmap{roaring64.New(), bitmapOf(1, 3, 5), sampleBitmap()} {
		var buf bytes.Buffer
		b.RunOptimize()
		b.WriteTo(&buf)
		f.Add(buf.Bytes())
		f.Add(frameDV(buf.Bytes()))
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		for _, bare := range []bool{false, true} {
			bm, err := DecodeDV(blob, DVOptions{AllowBare: bare, ExpectedCardinality: -1})
			if err != nil {
				continue
			}
			if !bm.IsEmpty() && bm.Maximum() > MaxDVPosition {
				t.Fatalf("accepted position %d above the maximum", bm.Maximum())
			}
			var buf bytes.Buffer
			if _, err := bm.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			again, err := DecodeDV(frameDV(buf.Bytes()), DVOptions{ExpectedCardinality: int64(bm.GetCardinality())})
			if err != nil || !again.Equals(bm) {
				t.Fatalf("re-encoded DV does not decode to the same set: %v", err)
			}
		}
		if bm, err := DecodePortableRoaring64(blob); err == nil {
			var buf bytes.Buffer
			bm.WriteTo(&buf)
			again, err := DecodePortableRoaring64(buf.Bytes())
			if err != nil || !again.Equals(bm) {
				t.Fatalf("re-encoded bitmap does not decode to the same set: %v", err)
			}
		}
	})
}

// FuzzDecodeStored: DecodeStored never panics, and what it accepts is what
// EncodeStored writes for that key under the store key. Seeds: sealed
// payloads, and forgeries — the version 1 layout with its CRC recomputed,
// a payload sealed with another key.
func FuzzDecodeStored(f *testing.F) {
	for _, k := range []string{"", "k", "position|v1|\"s3://b/d.parquet\"|10-2|\"s3://b/p.parquet\"#99"} {
		for _, b := range []*roaring64.Bitmap{roaring64.New(), bitmapOf(1, 1<<40), sampleBitmap()} {
			p, _ := EncodeStored(k, b, testStoreKey)
			f.Add(k, p)
			other, _ := EncodeStored(k, b, []byte("another cluster's store key....."))
			f.Add(k, other)
			var bm bytes.Buffer
			b.WriteTo(&bm)
			v1 := append([]byte("LWDB\x01"), binary.AppendUvarint(nil, uint64(len(k)))...)
			v1 = append(append(v1, k...), binary.AppendUvarint(nil, uint64(bm.Len()))...)
			v1 = append(v1, bm.Bytes()...)
			f.Add(k, binary.BigEndian.AppendUint32(v1, crc32.ChecksumIEEE(v1)))
		}
	}
	f.Fuzz(func(t *testing.T, key string, payload []byte) {
		bm, ok := DecodeStored(key, payload, testStoreKey)
		if !ok {
			return
		}
		if bm == nil {
			t.Fatal("ok without a bitmap")
		}
		if _, ok := DecodeStored(key+"x", payload, testStoreKey); ok {
			t.Fatal("a payload decoded under two keys")
		}
		p, err := EncodeStored(key, bm, testStoreKey)
		if err != nil {
			t.Fatal(err)
		}
		if again, ok := DecodeStored(key, p, testStoreKey); !ok || !again.Equals(bm) {
			t.Fatal("re-encoded payload does not round trip")
		}
	})
}
