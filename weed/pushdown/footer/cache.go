package footer

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
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

// Cache is an LRU of footers bounded by bytes (bytelru), with one load per
// key at a time. Bloom filters have a budget of their own, so large
// filters never evict footers.
type Cache struct {
	name    string
	open    Opener
	footers *bytelru.Cache[cacheKey, *entry]
	blooms  *bytelru.Cache[cacheKey, *entry]

	flight singleflight.Group

	// Tracker, when set, makes entries of paths changed since they were
	// loaded count as misses (a rewrite of the same size is reloaded).
	Tracker *freshness.Tracker

	hits, misses, readBytes atomic.Int64
	bloomHits, bloomMisses  atomic.Int64
	evictionsSeen           atomic.Int64 // footer evictions already added to metricEvictions

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
	// promoted is when a bloom entry found through a footer's weak
	// reference was last made recent (unix ns): within promoteEvery it is
	// not asked of the LRU again (no lock, no key hashing on that path).
	promoted atomic.Int64
}

// promoteEvery is the recency granularity of the LRUs: an entry made
// recent within it is not moved again, so a plan over 10,000 hot files
// does not relink the order 10,000 times.
const promoteEvery = time.Second

// touchAt makes the bloom entry e (found without the lock, through a
// footer's weak reference) recent unless it was recently.
func (c *Cache) touchAt(e *entry, now int64) {
	if now-e.promoted.Load() < int64(promoteEvery) {
		return
	}
	e.promoted.Store(now)
	c.blooms.GetAt(e.key, now)
}

type bloomEntry struct {
	bf  BloomFilter // nil: the chunk has no (usable) bloom filter
	err error
}

// NewCache returns a cache holding at most capacity bytes, opening files
// with open.
func NewCache(name string, capacity int64, open Opener) *Cache {
	c := &Cache{name: name, open: open,
		mHit: metricRequests.WithLabelValues(name, "hit"), mMiss: metricRequests.WithLabelValues(name, "miss"),
		mBloomHit: metricRequests.WithLabelValues(name+"_bloom", "hit"), mBloomMiss: metricRequests.WithLabelValues(name+"_bloom", "miss")}
	// the newest entry stays even alone over the budget (a footer larger
	// than the cache is served until the next arrives)
	c.footers = bytelru.New[cacheKey, *entry](capacity, bytelru.Options[cacheKey, *entry]{PromoteEvery: promoteEvery, KeepOne: true,
		Stale: func(k cacheKey, e *entry) bool { return !c.Tracker.Fresh(k.Path, e.loaded) }})
	c.blooms = bytelru.New[cacheKey, *entry](capacity, bytelru.Options[cacheKey, *entry]{PromoteEvery: promoteEvery, KeepOne: true})
	return c
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	f, b := c.footers.Stats(), c.blooms.Stats()
	return Stats{Entries: f.Entries, Bytes: f.Bytes, Capacity: f.Capacity, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Evictions: f.Evictions, ReadBytes: c.readBytes.Load(), BloomHits: c.bloomHits.Load(), BloomMisses: c.bloomMisses.Load(),
		BloomEntries: b.Entries, BloomBytes: b.Bytes, BloomEvictions: b.Evictions}
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
	clear(out[:len(ids)])
	found := c.footers.GetEach(len(ids), func(i int) cacheKey { return ids[i].key() }, func(i int, e *entry) { out[i] = e.footer })
	c.hits.Add(int64(found))
	c.mHit.Add(float64(found))
	return found
}

func (c *Cache) lookup(key cacheKey) *Footer {
	if e, ok := c.footers.Get(key); ok {
		return e.footer
	}
	return nil
}

func (c *Cache) insert(e *entry) {
	c.footers.Add(e.key, e, e.size)
	c.updateMetrics()
}

// updateMetrics sets the bytes gauge and adds the evictions since last
// time to their counter.
func (c *Cache) updateMetrics() {
	st := c.footers.Stats()
	metricBytes.WithLabelValues(c.name).Set(float64(st.Bytes))
	if seen := c.evictionsSeen.Load(); st.Evictions > seen && c.evictionsSeen.CompareAndSwap(seen, st.Evictions) {
		metricEvictions.WithLabelValues(c.name).Add(float64(st.Evictions - seen))
	}
}

// grow accounts bytes added to a cached footer (its page index).
func (c *Cache) grow(f *Footer, n int64) {
	if c.footers.Grow(f.ID.key(), n, func(e *entry) bool { return e.footer == f }) {
		c.updateMetrics()
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
					c.touchAt(e, lk.now)
					lk.bloomHits++
				} else {
					c.touchAt(e, time.Now().UnixNano())
					c.bloomHits.Add(1)
					c.mBloomHit.Inc()
				}
				return e.bloom.bf, e.bloom.err
			}
		}
	}
	key := cacheKey{Identity: f.ID, bloom: true, rg: rg, col: col, gen: f.gen}
	if e, ok := c.blooms.Get(key); ok {
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
		e.promoted.Store(time.Now().UnixNano())
		c.blooms.Add(key, e, size)
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
