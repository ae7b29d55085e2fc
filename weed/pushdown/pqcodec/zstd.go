// Package pqcodec replaces arrow-go's zstd page codec, process-wide, with
// one that decodes faster and byte-for-byte the same:
//
//	page reader ── Decode(dst sized to the page, src) ──▶ zstd
//	                 dst has no room past the page: klauspost/compress
//	                 must use its bounds-exact ("safe") copies, about 2×
//	                 slower on 16 KB pages
//	this codec:  decode into a pooled buffer with 128 KiB + 16 B of room
//	             (the fast copies), then copy into dst
//
// Importing the package registers it (init); encoding is arrow-go's own.
package pqcodec

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// slack is the room past the output klauspost/compress needs for its
// fast copies: a block (at most 128 KiB) plus 16 bytes of over-write.
const slack = 128<<10 + 16

// maxScratch bounds the pooled buffers: larger pages decode in place.
const maxScratch = 64 << 20

type zstdCodec struct {
	compress.Codec // arrow-go's: encoding, streams, bounds
	dec            *zstd.Decoder
	scratch        sync.Pool
}

func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(fmt.Sprintf("pqcodec: arrow-go has no zstd codec: %v", err))
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		panic(fmt.Sprintf("pqcodec: zstd decoder: %v", err))
	}
	compress.RegisterCodec(compress.Codecs.Zstd, newZstd(base, dec))
}

func newZstd(base compress.Codec, dec *zstd.Decoder) *zstdCodec {
	return &zstdCodec{Codec: base, dec: dec}
}

// DecodeWithError decodes src into dst, whose length is the decoded size
// the page header states (arrow-go reads the page from dst, not from the
// returned slice). A frame decoding to more than len(dst) is an error.
// Pages the uncompressed page cache holds are copied from it.
func (z *zstdCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	pc := pages.Load()
	if pc == nil || len(src) < minCachedPage {
		return z.decode(dst, src)
	}
	out, key, ok := pc.cached(src)
	if ok {
		return place(dst, out)
	}
	out, err := z.decode(dst, src)
	if err == nil {
		pc.keep(key, src, out)
	}
	return out, err
}

// direct says whether dst takes a page decoded straight into it (no room
// is missing past the page, or the page is too large for the scratch
// buffers).
func direct(dst []byte) bool {
	want := len(dst)
	return want == 0 || cap(dst)-want >= slack || want > maxScratch
}

// decode is zstd's decoding of src into dst.
func (z *zstdCodec) decode(dst, src []byte) ([]byte, error) {
	if direct(dst) {
		return z.dec.DecodeAll(src, dst[:0])
	}
	want := len(dst)
	p, _ := z.scratch.Get().(*[]byte)
	if p == nil || cap(*p) < want+slack {
		b := make([]byte, 0, want+slack)
		p = &b
	}
	out, err := z.dec.DecodeAll(src, (*p)[:0])
	if cap(out) == cap(*p) {
		defer z.scratch.Put(p)
	}
	if err != nil {
		return nil, err
	}
	return place(dst, out)
}

// place is a decoded page's bytes out in dst, as decode leaves them: all of
// them appended to dst[:0] when dst takes pages directly, else copied into
// dst, more than len(dst) an error.
func place(dst, out []byte) ([]byte, error) {
	if direct(dst) {
		return append(dst[:0], out...), nil
	}
	if len(out) > len(dst) {
		return nil, fmt.Errorf("zstd: page decodes to %d bytes, its header says %d", len(out), len(dst))
	}
	return dst[:copy(dst, out)], nil
}

func (z *zstdCodec) Decode(dst, src []byte) []byte {
	out, err := z.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // arrow-go's Decode contract; its page reader calls DecodeWithError
	}
	return out
}
