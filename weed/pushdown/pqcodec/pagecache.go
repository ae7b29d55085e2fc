package pqcodec

import (
	"bytes"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
)

// The uncompressed page cache (as ClickHouse's uncompressed cache):
// zstd pages this process decoded, kept by their compressed bytes, so a
// warm scan copies a page it decoded before instead of decompressing it
// again (decompression was 57% of the volume's CPU on a scattered
// equality, every page holding a match).
//
//	DecodeWithError(dst, src) ─▶ key: xxhash64(src), len(src)
//	   hit: the entry's compressed bytes equal src ─▶ its decoded bytes, copied
//	   miss ─▶ zstd ─▶ kept (src and the decoded bytes, both copied) when
//	         the key was seen before, else only the key remembered
//
// The keys seen once (a small LRU of keys) keep a scan that reads each page
// once — a cold scan larger than the cache — from copying every page into
// the cache only to evict it (a miss that keeps its page cost 20–25% more
// than decoding alone, 16 KiB pages); a page decoded a second time is kept.
//
// An entry holds the compressed bytes it was decoded from and is used only
// when they equal the page's: a hash collision is a miss, never another
// page's rows. Off until SetPageCache sizes it (the weed commands do, from
// -pushdown.pageCacheMB) or EnsurePageCache turns it on (a connector does,
// in a process whose cache nothing sized).
var pages atomic.Pointer[pageCache]

// sized: SetPageCache was called, so the process chose its cache (or
// chose none) and EnsurePageCache leaves it be.
var sized atomic.Bool

type pageCache struct {
	c            *bytelru.Cache[pageKey, *cachedPage]
	seen         *bytelru.Cache[pageKey, struct{}] // keys decoded once, not kept
	hits, misses atomic.Int64
}

// seenKeyBytes is what a remembered key counts against the seen keys'
// bound: a 256th of the cache's, twice the keys of the pages it holds when
// they average 16 KiB compressed and decoded.
const seenKeyBytes = 32

type pageKey struct {
	sum uint64
	n   int
}

type cachedPage struct{ src, out []byte }

// minCachedPage: smaller pages are decoded every time.
const minCachedPage = 256

// SetPageCache sizes the process's uncompressed page cache to capacity
// bytes (compressed plus decoded bytes of its pages); 0 or less turns it
// off. Pages already kept are dropped.
func SetPageCache(capacity int64) {
	sized.Store(true)
	if capacity <= 0 {
		pages.Store(nil)
		return
	}
	pages.Store(newPageCache(capacity))
}

func newPageCache(capacity int64) *pageCache {
	return &pageCache{
		c:    bytelru.New[pageKey, *cachedPage](capacity, bytelru.Options[pageKey, *cachedPage]{PromoteEvery: time.Second}),
		seen: bytelru.New[pageKey, struct{}](max(capacity/256, 64*seenKeyBytes), bytelru.Options[pageKey, struct{}]{PromoteEvery: time.Second}),
	}
}

// EnsurePageCache turns the process's page cache on at capacity bytes
// unless its size was already chosen (by SetPageCache, or by an earlier
// EnsurePageCache): a library that wants the cache does not override the
// process's own setting, not even a setting of none. capacity 0 or less
// does nothing.
func EnsurePageCache(capacity int64) {
	if capacity > 0 && sized.CompareAndSwap(false, true) {
		pages.Store(newPageCache(capacity))
	}
}

// PageCacheStats are the uncompressed page cache's figures (ok false:
// off).
func PageCacheStats() (st bytelru.Stats, hits, misses int64, ok bool) {
	pc := pages.Load()
	if pc == nil {
		return bytelru.Stats{}, 0, 0, false
	}
	return pc.c.Stats(), pc.hits.Load(), pc.misses.Load(), true
}

// cached is src's decoded bytes when the cache holds them.
func (pc *pageCache) cached(src []byte) (out []byte, key pageKey, ok bool) {
	key = pageKey{xxhash.Sum64(src), len(src)}
	if e, found := pc.c.Get(key); found && bytes.Equal(e.src, src) {
		pc.hits.Add(1)
		return e.out, key, true
	}
	pc.misses.Add(1)
	return nil, key, false
}

// keep adds src's decoded bytes out (both copied) when key was seen
// before; the first time it only remembers key.
func (pc *pageCache) keep(key pageKey, src, out []byte) {
	if _, again := pc.seen.Get(key); !again {
		pc.seen.Add(key, struct{}{}, seenKeyBytes)
		return
	}
	pc.c.Add(key, &cachedPage{src: bytes.Clone(src), out: bytes.Clone(out)}, int64(len(src)+len(out)))
}
