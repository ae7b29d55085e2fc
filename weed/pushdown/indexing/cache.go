package indexing

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// IndexCache keeps opened payloads in memory, bounded by the bytes they
// hold (golang-lru's LRU, evicting the oldest while over capacity).
type IndexCache struct {
	mu                      sync.Mutex
	capacity                int64
	bytes                   int64
	sizes                   map[string]int64
	hits, misses, evictions int64
	lru                     *lru.Cache[string, cached]
	// Tracker, when set, makes an index whose payload changed (rewritten,
	// deleted) since it was opened a miss.
	Tracker *freshness.Tracker
}

type cached struct {
	idx     sideindex.Index
	payload string // location
	loaded  int64  // freshness.Now() before the payload was read
}

// NewIndexCache holds at most capacity bytes of opened indexes.
func NewIndexCache(capacity int64) *IndexCache {
	c := &IndexCache{capacity: capacity, sizes: map[string]int64{}}
	c.lru, _ = lru.NewWithEvict[string, cached](1<<20, func(k string, _ cached) {
		c.bytes -= c.sizes[k]
		delete(c.sizes, k)
		c.evictions++
	})
	return c
}

// Get returns the cached index of key.
func (c *IndexCache) Get(key string) (sideindex.Index, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	if !ok {
		c.misses++
		return nil, false
	}
	if !c.Tracker.Fresh(e.payload, e.loaded) {
		c.lru.Remove(key)
		c.misses++
		return nil, false
	}
	c.hits++
	return e.idx, true
}

// Holds reports whether key is cached and fresh, without counting a hit
// or a miss or making it recent (a caller deciding whether to decode).
func (c *IndexCache) Holds(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Peek(key)
	return ok && c.Tracker.Fresh(e.payload, e.loaded)
}

// Add caches idx (of size bytes), opened from the payload at location
// read at loaded (freshness.Now() before the read), under key; one larger
// than the whole cache is not kept.
func (c *IndexCache) Add(key, location string, loaded int64, idx sideindex.Index, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.capacity {
		return
	}
	if c.lru.Remove(key) {
		c.evictions-- // a replacement, not an eviction
	}
	c.sizes[key] = size
	c.bytes += size
	c.lru.Add(key, cached{idx: idx, payload: location, loaded: loaded})
	for c.bytes > c.capacity && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Stats are the cache's entries, bytes, capacity, hits, misses and
// evictions (stale entries dropped count as evictions too).
func (c *IndexCache) Stats() (entries, bytes, capacity, hits, misses, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.lru.Len()), c.bytes, c.capacity, c.hits, c.misses, c.evictions
}
