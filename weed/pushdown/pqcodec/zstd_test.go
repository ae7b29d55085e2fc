package pqcodec

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

func pageOf(n int, seed int64) []byte {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(r.Int63n(1<<20)))
	}
	return b
}

func TestZstdCodecIsRegisteredAndDecodesPagesOfEverySizeIntoDst(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(*zstdCodec); !ok {
		t.Fatalf("registered zstd codec is %T", codec)
	}
	for _, n := range []int{1, 100, 2048, 20_000, 300_000} { // one block to many
		raw := pageOf(n, int64(n))
		src := codec.Encode(nil, raw)
		for _, extra := range []int{0, 16, slack} {
			dst := make([]byte, len(raw), len(raw)+extra)
			out, err := compress.Decode(codec, dst, src)
			if err != nil {
				t.Fatalf("%d values, %d spare: %v", n, extra, err)
			}
			if !bytes.Equal(out, raw) || !bytes.Equal(dst, raw) {
				t.Fatalf("%d values, %d spare: decoded bytes differ (arrow-go reads dst)", n, extra)
			}
		}
	}
}

func TestZstdCodecRefusesAFrameLargerThanThePageHeaderSays(t *testing.T) {
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	raw := pageOf(2048, 7)
	src := codec.Encode(nil, raw)
	dst := make([]byte, len(raw)-8)
	if _, err := compress.Decode(codec, dst, src); err == nil {
		t.Fatal("a frame larger than dst decoded without error")
	}
	if _, err := compress.Decode(codec, make([]byte, 100), []byte("not zstd at all")); err == nil {
		t.Fatal("garbage decoded without error")
	}
}

func BenchmarkZstdPageDecode(b *testing.B) {
	raw := pageOf(2048, 1)
	base := compress.Codecs.Zstd
	codec, _ := compress.GetCodec(base)
	src := codec.Encode(nil, raw)
	dst := make([]byte, len(raw))
	b.Run("pqcodec", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for i := 0; i < b.N; i++ {
			if _, err := compress.Decode(codec, dst, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("arrow-go", func(b *testing.B) {
		orig := codec.(*zstdCodec).Codec
		b.SetBytes(int64(len(raw)))
		for i := 0; i < b.N; i++ {
			if _, err := compress.Decode(orig, dst, src); err != nil {
				b.Fatal(err)
			}
		}
	})
}
