package pqcodec

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// With the page cache on, a page decoded a third time is copied from it
// (the first decode remembers its key, the second keeps it): the same
// bytes in dst whatever room dst has past the page, a hit counted;
// a frame larger than the page header says is refused from the cache as
// by zstd; garbage is never kept.
func TestAPageDecodedAgainComesFromThePageCacheByteForByte(t *testing.T) {
	SetPageCache(8 << 20)
	defer SetPageCache(0)
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	for _, n := range []int{100, 2048, 20_000} {
		raw := pageOf(n, int64(n)+1)
		src := codec.Encode(nil, raw)
		decodes := 0
		for round := range 2 {
			for _, extra := range []int{0, 16, slack} {
				decodes++
				_, hits0, _, _ := PageCacheStats()
				dst := make([]byte, len(raw), len(raw)+extra)
				out, err := compress.Decode(codec, dst, src)
				if err != nil {
					t.Fatalf("%d values, round %d, %d spare: %v", n, round, extra, err)
				}
				if !bytes.Equal(out, raw) || !bytes.Equal(dst, raw) {
					t.Fatalf("%d values, round %d, %d spare: decoded bytes differ", n, round, extra)
				}
				want := hits0
				if decodes > 2 {
					want++
				}
				if _, hits, _, _ := PageCacheStats(); hits != want {
					t.Fatalf("%d values, decode %d (%d spare): %d hits, want %d", n, decodes, extra, hits, want)
				}
			}
		}
		if _, err := compress.Decode(codec, make([]byte, len(raw)-8), src); err == nil {
			t.Fatalf("%d values: a cached frame larger than dst decoded without error", n)
		}
	}
	garbage := bytes.Repeat([]byte("not zstd at all "), 40)
	before, _, _, _ := PageCacheStats()
	if _, err := compress.Decode(codec, make([]byte, 100), garbage); err == nil {
		t.Fatal("garbage decoded without error")
	}
	if after, _, _, _ := PageCacheStats(); after.Entries != before.Entries {
		t.Fatal("a page that failed to decode was kept")
	}
}

// An entry whose compressed bytes differ from the page's (a hash
// collision) is a miss: the page is decoded, never given another's bytes.
func TestAPageCacheEntryOfOtherCompressedBytesIsAMiss(t *testing.T) {
	SetPageCache(8 << 20)
	defer SetPageCache(0)
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	raw := pageOf(4096, 3)
	src := codec.Encode(nil, raw)
	pc := pages.Load()
	_, key, _ := pc.cached(src)
	other := bytes.Clone(src)
	other[len(other)/2] ^= 0xff
	for range 2 { // seen, then kept
		pc.keep(key, other, bytes.Repeat([]byte{7}, len(raw))) // under src's key
	}
	if st, _, _, _ := PageCacheStats(); st.Entries != 1 {
		t.Fatalf("%d entries, want the colliding one", st.Entries)
	}
	dst := make([]byte, len(raw))
	out, err := compress.Decode(codec, dst, src)
	if err != nil || !bytes.Equal(out, raw) {
		t.Fatalf("decoded %v (equal %v): the other entry's bytes were given", err, bytes.Equal(out, raw))
	}
}

// A page decoded once is not kept (a scan reading each page once does not
// churn the cache); decoded again it is, and a third decode is a hit.
func TestAPageIsKeptOnlyWhenDecodedASecondTime(t *testing.T) {
	SetPageCache(8 << 20)
	defer SetPageCache(0)
	codec, _ := compress.GetCodec(compress.Codecs.Zstd)
	raw := pageOf(4096, 11)
	src := codec.Encode(nil, raw)
	for i, want := range []struct{ entries, hits int64 }{{0, 0}, {1, 0}, {1, 1}} {
		if _, err := compress.Decode(codec, make([]byte, len(raw)), src); err != nil {
			t.Fatal(err)
		}
		if st, hits, _, _ := PageCacheStats(); st.Entries != want.entries || hits != want.hits {
			t.Fatalf("after decode %d: %d entries, %d hits; want %d, %d", i+1, st.Entries, hits, want.entries, want.hits)
		}
	}
}

// EnsurePageCache turns the cache on only in a process that has not chosen
// its size: after SetPageCache (even of none) it changes nothing, and a
// second EnsurePageCache keeps the first one's cache.
func TestEnsurePageCacheNeverOverridesTheProcesssOwnChoice(t *testing.T) {
	defer func() { SetPageCache(0); sized.Store(false) }()
	sized.Store(false)
	pages.Store(nil)
	EnsurePageCache(0)
	if _, _, _, on := PageCacheStats(); on || sized.Load() {
		t.Fatal("EnsurePageCache(0) turned the cache on or chose its size")
	}
	EnsurePageCache(4 << 20)
	st, _, _, on := PageCacheStats()
	if !on || st.Capacity != 4<<20 {
		t.Fatalf("EnsurePageCache in an unsized process: on %v, capacity %d", on, st.Capacity)
	}
	first := pages.Load()
	EnsurePageCache(8 << 20)
	if pages.Load() != first {
		t.Fatal("a second EnsurePageCache replaced the first one's cache")
	}
	SetPageCache(0)
	EnsurePageCache(4 << 20)
	if _, _, _, on := PageCacheStats(); on {
		t.Fatal("EnsurePageCache turned on a cache the process had set to none")
	}
}
