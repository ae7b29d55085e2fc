// Package bytelru is lakeweed's one byte-bounded cache: golang-lru's
// simplelru keeps the recency order, this type bounds the entries by the
// bytes they hold (each added with its size) instead of their count. The
// footer cache, the delete-bitmap cache, the side-index and chunk caches
// of the volume service and the connector's range cache are all one.
//
//	Add(k, v, size) ─▶ front of the order; while bytes > capacity, the oldest
//	                   evicted (OnEvict told; an entry larger than the whole
//	                   cache is not kept)
//	Get(k)          ─▶ v, moved to the front (at most once per PromoteEvery)
//	Peek(k)         ─▶ v, order untouched
//	Grow(k, n, …)   ─▶ an entry's size changed in place (then evict as Add)
//	Stale           ─▶ an entry found stale is dropped and missed
//
// A Cache is safe for concurrent use; OnEvict runs under its lock and must
// not call back into it.
package bytelru

import (
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Options tune a Cache.
type Options[K comparable, V any] struct {
	// OnEvict is told of every entry leaving the cache: evicted for room,
	// removed, replaced by Add, dropped by RemoveIf.
	OnEvict func(K, V)
	// PromoteEvery: an entry moved to the front within this long is not
	// moved again by Get (recency at that granularity: a lookup of
	// thousands of hot keys does not relink the order thousands of times).
	// 0: every Get.
	PromoteEvery time.Duration
	// KeepOne: the newest entry stays even when it alone is over the
	// capacity (a footer larger than the cache is still served from it
	// until the next one arrives).
	KeepOne bool
	// Stale, when set, is asked of every entry Get, GetAt and GetEach find:
	// a stale one is dropped (counted as an eviction) and missed.
	Stale func(K, V) bool
}

// Stats are a cache's figures.
type Stats struct {
	Entries, Bytes, Capacity, Evictions int64
}

type item[V any] struct {
	v        V
	size     int64
	promoted int64 // unix ns of the last move to the front
}

// Cache is an LRU bounded by bytes.
type Cache[K comparable, V any] struct {
	mu        sync.Mutex
	capacity  int64
	bytes     int64
	evictions int64
	opts      Options[K, V]
	order     *simplelru.LRU[K, *item[V]]
}

// New is a cache of at most capacity bytes.
func New[K comparable, V any](capacity int64, opts Options[K, V]) *Cache[K, V] {
	c := &Cache[K, V]{capacity: capacity, opts: opts}
	// simplelru counts entries: the bound is bytes, so the count is
	// unbounded; its callback keeps the byte total whatever removed it
	c.order, _ = simplelru.NewLRU[K, *item[V]](math.MaxInt, func(k K, it *item[V]) {
		c.bytes -= it.size
		if c.opts.OnEvict != nil {
			c.opts.OnEvict(k, it.v)
		}
	})
	return c
}

// Get returns the value of k, making it recent.
func (c *Cache[K, V]) Get(k K) (v V, ok bool) {
	return c.GetAt(k, time.Now().UnixNano())
}

// GetAt is Get with the clock read (unix ns): a caller looking up many
// keys reads it once.
func (c *Cache[K, V]) GetAt(k K, now int64) (v V, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(k, now)
}

func (c *Cache[K, V]) getLocked(k K, now int64) (v V, ok bool) {
	it, ok := c.order.Peek(k)
	if !ok {
		return v, false
	}
	if c.opts.Stale != nil && c.opts.Stale(k, it.v) {
		c.order.Remove(k)
		c.evictions++
		return v, false
	}
	if now-it.promoted >= int64(c.opts.PromoteEvery) {
		c.order.Get(k) // to the front
		it.promoted = now
	}
	return it.v, true
}

// GetEach looks up keys key(0) … key(n-1) under one lock and one clock
// reading, calling found for each one cached; it returns how many were.
func (c *Cache[K, V]) GetEach(n int, key func(i int) K, found func(i int, v V)) int {
	now := time.Now().UnixNano()
	hits := 0
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		if v, ok := c.getLocked(key(i), now); ok {
			found(i, v)
			hits++
		}
	}
	return hits
}

// Peek returns the value of k without making it recent.
func (c *Cache[K, V]) Peek(k K) (v V, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.order.Peek(k)
	if !ok {
		return v, false
	}
	return it.v, true
}

// Add caches v of size bytes under k (replacing what k held) and evicts
// the oldest entries while the cache is over its capacity. kept is false
// for a value larger than the whole cache (unless KeepOne).
func (c *Cache[K, V]) Add(k K, v V, size int64) (kept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Remove(k)
	if size > c.capacity && !c.opts.KeepOne {
		return false
	}
	c.order.Add(k, &item[V]{v: v, size: size, promoted: time.Now().UnixNano()})
	c.bytes += size
	c.evictLocked()
	return true
}

// Grow adds n bytes to k's size (its value grew in place) and evicts as
// Add does; false when k is not cached, or its value is not the one same
// accepts (nil: any).
func (c *Cache[K, V]) Grow(k K, n int64, same func(V) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.order.Peek(k)
	if !ok || (same != nil && !same(it.v)) {
		return false
	}
	it.size += n
	c.bytes += n
	c.evictLocked()
	return true
}

func (c *Cache[K, V]) evictLocked() {
	for c.bytes > c.capacity && c.order.Len() > 0 {
		if c.opts.KeepOne && c.order.Len() == 1 {
			return
		}
		c.order.RemoveOldest()
		c.evictions++
	}
}

// Remove drops k (not counted as an eviction); false when not cached.
func (c *Cache[K, V]) Remove(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Remove(k)
}

// RemoveIf drops k when drop says its value may not stay (a stale entry),
// counted as an eviction; it reports whether k was dropped.
func (c *Cache[K, V]) RemoveIf(k K, drop func(V) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.order.Peek(k)
	if !ok || !drop(it.v) {
		return false
	}
	c.order.Remove(k)
	c.evictions++
	return true
}

// Clear drops every entry (OnEvict told; not counted as evictions).
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Purge()
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Stats returns the entries, bytes, capacity and evictions.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Entries: int64(c.order.Len()), Bytes: c.bytes, Capacity: c.capacity, Evictions: c.evictions}
}
