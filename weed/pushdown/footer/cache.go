package footer

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// Metrics are the Prometheus collectors of a Cache.
var (
	metricRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "footer_cache_requests_total",
		Help: "Footer cache lookups by result (hit, miss).",
	}, []string{"cache", "result"})
	metricBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "footer_cache_bytes",
		Help: "Bytes held by the footer cache (footers, page indexes, bloom filters).",
	}, []string{"cache"})
	metricEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "footer_cache_evictions_total",
		Help: "Entries evicted from the footer cache.",
	}, []string{"cache"})
	metricReadBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "footer_cache_read_bytes_total",
		Help: "Bytes read from storage to fill the footer cache.",
	}, []string{"cache"})
)

// Register adds the cache metrics to reg (once).
func Register(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{metricRequests, metricBytes, metricEvictions, metricReadBytes} {
		_ = reg.Register(c)
	}
}

// Stats are a Cache's counters.
type Stats struct {
	Entries, Bytes, Capacity, Hits, Misses, Evictions, ReadBytes     int64
	BloomEntries, BloomBytes, BloomHits, BloomMisses, BloomEvictions int64
}

// Cache is an LRU of footers bounded by bytes, with one load per key at a
// time. Bloom filters have a budget of their own, so large filters never
// evict footers.
type Cache struct {
	name     string
	capacity int64
	open     Opener
	blooms   *lruBytes

	mu    sync.Mutex
	lru   *list.List // of *entry, front = most recent
	items map[cacheKey]*list.Element
	bytes int64

	flight singleflight.Group

	// Tracker, when set, makes entries of paths changed since they were
	// loaded count as misses (a rewrite of the same size is reloaded).
	Tracker *freshness.Tracker

	hits, misses, evictions, readBytes atomic.Int64
	bloomHits, bloomMisses             atomic.Int64

	// counters resolved once (a label lookup per request costs more than
	// the cache hit it counts)
	mHit, mMiss, mBloomHit, mBloomMiss prometheus.Counter
}

type entry struct {
	key    cacheKey
	footer *Footer
	bloom  *bloomEntry
	size   int64
	loaded int64 // freshness.Now() before the footer was read
	// promoted is when the entry last moved to the front (unix ns): an
	// entry promoted within promoteEvery is not moved again, so a plan over
	// 10,000 hot files does not relink the list 10,000 times. Eviction
	// order is LRU at that granularity.
	promoted atomic.Int64
	el       *list.Element // its element while in an LRU (under the LRU's lock)
}

// promoteEvery is the recency granularity of the LRUs.
const promoteEvery = int64(time.Second)

// promote moves el to the front of l unless it moved there recently.
func promote(l *list.List, el *list.Element) { promoteAt(l, el, time.Now().UnixNano()) }

// promoteAt is promote with the clock read (now, unix ns).
func promoteAt(l *list.List, el *list.Element, now int64) {
	e := el.Value.(*entry)
	if now-e.promoted.Load() >= promoteEvery {
		l.MoveToFront(el)
		e.promoted.Store(now)
	}
}

// touchAt promotes e (found without the lock, through a footer's bloom
// reference) if it is still in l and was not promoted recently.
func (l *lruBytes) touchAt(e *entry, now int64) {
	if now-e.promoted.Load() < promoteEvery {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[e.key]; ok && el == e.el {
		promoteAt(l.lru, el, now)
	}
}

type bloomEntry struct {
	bf  BloomFilter // nil: the chunk has no (usable) bloom filter
	err error
}

// NewCache returns a cache holding at most capacity bytes, opening files
// with open.
func NewCache(name string, capacity int64, open Opener) *Cache {
	return &Cache{name: name, capacity: capacity, open: open, lru: list.New(), items: map[cacheKey]*list.Element{},
		blooms: &lruBytes{capacity: capacity, lru: list.New(), items: map[cacheKey]*list.Element{}},
		mHit:   metricRequests.WithLabelValues(name, "hit"), mMiss: metricRequests.WithLabelValues(name, "miss"),
		mBloomHit: metricRequests.WithLabelValues(name+"_bloom", "hit"), mBloomMiss: metricRequests.WithLabelValues(name+"_bloom", "miss")}
}

// lruBytes is a plain LRU bounded by bytes.
type lruBytes struct {
	mu        sync.Mutex
	capacity  int64
	bytes     int64
	lru       *list.List
	items     map[cacheKey]*list.Element
	evictions int64
}

func (l *lruBytes) get(key cacheKey) (*entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		promote(l.lru, el)
		return el.Value.(*entry), true
	}
	return nil, false
}

func (l *lruBytes) put(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.items[e.key]; ok {
		l.bytes -= old.Value.(*entry).size
		l.lru.Remove(old)
	}
	e.promoted.Store(time.Now().UnixNano())
	e.el = l.lru.PushFront(e)
	l.items[e.key] = e.el
	l.bytes += e.size
	for l.bytes > l.capacity && l.lru.Len() > 1 {
		el := l.lru.Back()
		old := el.Value.(*entry)
		l.lru.Remove(el)
		delete(l.items, old.key)
		l.bytes -= old.size
		l.evictions++
	}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blooms.mu.Lock()
	defer c.blooms.mu.Unlock()
	return Stats{Entries: int64(c.lru.Len()), Bytes: c.bytes, Capacity: c.capacity, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Evictions: c.evictions.Load(), ReadBytes: c.readBytes.Load(), BloomHits: c.bloomHits.Load(), BloomMisses: c.bloomMisses.Load(),
		BloomEntries: int64(c.blooms.lru.Len()), BloomBytes: c.blooms.bytes, BloomEvictions: c.blooms.evictions}
}

// Get returns the footer of id, loading it on a miss. hit reports whether
// it was cached.
func (c *Cache) Get(ctx context.Context, id Identity) (f *Footer, hit bool, err error) {
	key := id.key()
	if f := c.lookup(key); f != nil {
		c.hits.Add(1)
		c.mHit.Inc()
		return f, true, nil
	}
	c.misses.Add(1)
	c.mMiss.Inc()
	// The load runs detached from this caller's cancellation (bounded by
	// LoadTimeout): callers waiting for the same footer must not fail
	// because the first of them gave up. Each caller waits on its own ctx.
	// (singleflight re-raises a panic of fn on a goroutine of its own,
	// which no one can recover: safe.Value turns it into an error first)
	ch := c.flight.DoChan(fmt.Sprintf("%s\x00%d", id.Path, id.Size), safe.Value("footer load", func() (any, error) {
		if f := c.lookup(key); f != nil {
			return f, nil
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoadTimeout)
		defer cancel()
		loaded := freshness.Now()
		src, err := c.open(lctx, id)
		if err != nil {
			return nil, err
		}
		f, err := Load(lctx, id, src)
		if err != nil {
			return nil, err
		}
		c.recordRead(f.loadRead)
		f.open = c.open
		f.cache = c
		f.gen = generation.Add(1)
		c.insert(&entry{key: key, footer: f, size: f.size, loaded: loaded})
		return f, nil
	}))
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, false, r.Err
		}
		return r.Val.(*Footer), false, nil
	}
}

// LoadTimeout bounds one footer load (shared by every caller waiting).
const LoadTimeout = 2 * time.Minute

// generation numbers footer loads.
var generation atomic.Uint64

// Peek returns the cached footer of id (counting a hit), or nil without
// counting anything.
func (c *Cache) Peek(id Identity) *Footer {
	if f := c.lookup(id.key()); f != nil {
		c.hits.Add(1)
		c.mHit.Inc()
		return f
	}
	return nil
}

// PeekMany is Peek of every identity of ids into out (index-aligned; nil
// where not cached), under one lock and one clock reading: a plan of many
// files looks them all up at once. It returns the number found.
func (c *Cache) PeekMany(ids []Identity, out []*Footer) int {
	found := 0
	now := time.Now().UnixNano()
	c.mu.Lock()
	for i, id := range ids {
		if out[i] = c.lookupLocked(id.key(), now); out[i] != nil {
			found++
		}
	}
	c.mu.Unlock()
	c.hits.Add(int64(found))
	c.mHit.Add(float64(found))
	return found
}

func (c *Cache) lookup(key cacheKey) *Footer {
	now := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lookupLocked(key, now)
}

// lookupLocked is lookup with c.mu held; now is the clock for promotion.
func (c *Cache) lookupLocked(key cacheKey, now int64) *Footer {
	if el, ok := c.items[key]; ok {
		e := el.Value.(*entry)
		if !c.Tracker.Fresh(key.Path, e.loaded) {
			c.lru.Remove(el)
			delete(c.items, key)
			c.bytes -= e.size
			return nil
		}
		promoteAt(c.lru, el, now)
		return e.footer
	}
	return nil
}

func (c *Cache) insert(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[e.key]; ok {
		c.bytes -= old.Value.(*entry).size
		c.lru.Remove(old)
	}
	e.promoted.Store(time.Now().UnixNano())
	c.items[e.key] = c.lru.PushFront(e)
	c.bytes += e.size
	c.evictLocked()
	metricBytes.WithLabelValues(c.name).Set(float64(c.bytes))
}

func (c *Cache) evictLocked() {
	for c.bytes > c.capacity && c.lru.Len() > 1 {
		el := c.lru.Back()
		e := el.Value.(*entry)
		c.lru.Remove(el)
		delete(c.items, e.key)
		c.bytes -= e.size
		c.evictions.Add(1)
		metricEvictions.WithLabelValues(c.name).Inc()
	}
}

// grow accounts bytes added to a cached footer (its page index).
func (c *Cache) grow(f *Footer, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[f.ID.key()]; ok && el.Value.(*entry).footer == f {
		el.Value.(*entry).size += n
		c.bytes += n
		c.evictLocked()
		metricBytes.WithLabelValues(c.name).Set(float64(c.bytes))
	}
}

func (c *Cache) recordRead(n int64) {
	c.readBytes.Add(n)
	metricReadBytes.WithLabelValues(c.name).Add(float64(n))
}

// BloomFilter returns the (cached) bloom filter of column col in row group
// rg of footer f — or, for a chunk without one whose data pages are all
// dictionary-encoded, its dictionary as an exact set (IsDictionarySet): nil
// when the chunk has neither or it cannot be read (a "maybe" for the
// caller; the error says why).
func (c *Cache) BloomFilter(ctx context.Context, f *Footer, rg, col int) (BloomFilter, error) {
	return c.bloomFilter(ctx, f, rg, col, nil)
}

// Lookups are one goroutine's bloom filter lookups of a plan over many
// files: hits are counted locally and recency is kept with one clock
// reading (LRU order at plan granularity), so the lookups share no cache
// line written per lookup. Flush adds the counts to the cache.
type Lookups struct {
	c         *Cache
	now       int64
	bloomHits int64
}

// Lookups starts a batch of lookups.
func (c *Cache) Lookups() *Lookups { return &Lookups{c: c, now: time.Now().UnixNano()} }

// BloomFilter is Cache.BloomFilter, counted in the batch.
func (l *Lookups) BloomFilter(ctx context.Context, f *Footer, rg, col int) (BloomFilter, error) {
	return l.c.bloomFilter(ctx, f, rg, col, l)
}

// Flush adds the batch's counts to the cache's.
func (l *Lookups) Flush() {
	l.c.bloomHits.Add(l.bloomHits)
	l.c.mBloomHit.Add(float64(l.bloomHits))
	l.bloomHits = 0
}

func (c *Cache) bloomFilter(ctx context.Context, f *Footer, rg, col int, lk *Lookups) (BloomFilter, error) {
	// Fast path: the footer's weak reference to the cached entry (no key
	// hashing, no lock); a collected or foreign entry falls through.
	slot := f.bloomSlot(rg, col)
	if slot != nil && f.cache == c {
		if ref := slot.Load(); ref != nil {
			if e := ref.Value(); e != nil {
				if lk != nil {
					c.blooms.touchAt(e, lk.now)
					lk.bloomHits++
				} else {
					c.blooms.touchAt(e, time.Now().UnixNano())
					c.bloomHits.Add(1)
					c.mBloomHit.Inc()
				}
				return e.bloom.bf, e.bloom.err
			}
		}
	}
	key := cacheKey{Identity: f.ID, bloom: true, rg: rg, col: col, gen: f.gen}
	if e, ok := c.blooms.get(key); ok {
		if slot != nil && f.cache == c {
			w := weak.Make(e)
			slot.Store(&w)
		}
		be := e.bloom
		c.bloomHits.Add(1)
		c.mBloomHit.Inc()
		return be.bf, be.err
	}
	c.bloomMisses.Add(1)
	c.mBloomMiss.Inc()
	ch := c.flight.DoChan(fmt.Sprintf("%s\x00%d\x00bloom\x00%d\x00%d\x00%d", f.ID.Path, f.ID.Size, rg, col, f.gen), safe.Value("bloom filter load", func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoadTimeout)
		defer cancel()
		var bf BloomFilter
		var err error
		if f.Chunks[rg][col].BloomOffset > 0 {
			bf, err = f.ReadBloomFilter(lctx, rg, col)
		} else {
			bf, err = f.ReadDictionarySet(lctx, rg, col)
		}
		if err != nil && perr.IsContext(err) {
			return nil, err // not cached: the next query retries
		}
		be := &bloomEntry{bf: bf, err: err}
		size := int64(128)
		if bf != nil {
			size += bf.Size()
		}
		e := &entry{key: key, bloom: be, size: size}
		c.blooms.put(e)
		if slot != nil && f.cache == c {
			w := weak.Make(e)
			slot.Store(&w)
		}
		return be, nil
	}))
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		be := r.Val.(*bloomEntry)
		return be.bf, be.err
	}
}

// Identify checks the file at path exists with size bytes and rows rows
// (rows < 0: any) and returns its footer hash — with path, size and rows the
// identity side-index payloads and persisted bitmaps are kept under.
func (c *Cache) Identify(ctx context.Context, path string, size, rows int64) (string, error) {
	f, _, err := c.Get(ctx, Identity{Path: path, Size: size})
	if err != nil {
		return "", err
	}
	if rows >= 0 && f.NumRows() != rows {
		return "", perr.New(perr.FailedPrecondition, "%s holds %d rows, the request says %d: the file changed or the request is wrong", path, f.NumRows(), rows)
	}
	return f.Hash, nil
}
