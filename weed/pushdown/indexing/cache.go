package indexing

import (
	"sync"

	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// IndexCache keeps opened payloads in memory, bounded by the bytes they
// hold (bytelru).
type IndexCache struct {
	mu           sync.Mutex
	hits, misses int64
	lru          *bytelru.Cache[string, cached]
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
	return &IndexCache{lru: bytelru.New[string, cached](capacity, bytelru.Options[string, cached]{})}
}

// Get returns the cached index of key.
func (c *IndexCache) Get(key string) (sideindex.Index, bool) {
	if c.lru.RemoveIf(key, func(e cached) bool { return !c.Tracker.Fresh(e.payload, e.loaded) }) {
		c.count(false)
		return nil, false
	}
	e, ok := c.lru.Get(key)
	c.count(ok)
	if !ok {
		return nil, false
	}
	return e.idx, true
}

func (c *IndexCache) count(hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hit {
		c.hits++
	} else {
		c.misses++
	}
}

// Holds reports whether key is cached and fresh, without counting a hit
// or a miss or making it recent (a caller deciding whether to decode).
func (c *IndexCache) Holds(key string) bool {
	e, ok := c.lru.Peek(key)
	return ok && c.Tracker.Fresh(e.payload, e.loaded)
}

// Add caches idx (of size bytes), opened from the payload at location
// read at loaded (freshness.Now() before the read), under key; one larger
// than the whole cache is not kept.
func (c *IndexCache) Add(key, location string, loaded int64, idx sideindex.Index, size int64) {
	c.lru.Add(key, cached{idx: idx, payload: location, loaded: loaded}, size)
}

// Stats are the cache's entries, bytes, capacity, hits, misses and
// evictions (stale entries dropped count as evictions too).
func (c *IndexCache) Stats() (entries, bytes, capacity, hits, misses, evictions int64) {
	s := c.lru.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.Entries, s.Bytes, s.Capacity, c.hits, c.misses, s.Evictions
}
