package deletes

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"golang.org/x/sync/singleflight"

	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Metrics of every Computer's cache.
var (
	metricRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "delete_bitmap_cache_requests_total",
		Help: "Delete bitmap lookups by kind (dv, position, equality) and result (hit, store_hit, miss).",
	}, []string{"kind", "result"})
	metricBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "delete_bitmap_cache_bytes",
		Help: "Bytes of delete bitmaps held in memory.",
	})
	metricEvictions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "delete_bitmap_cache_evictions_total",
		Help: "Delete bitmaps evicted from memory.",
	})
)

// Register adds the delete bitmap cache metrics to reg (once).
func Register(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{metricRequests, metricBytes, metricEvictions} {
		_ = reg.Register(c)
	}
}

// DefaultCacheBytes is the memory cache size when Options.CacheBytes is 0.
const DefaultCacheBytes = 256 << 20

// Options configure a Computer.
type Options struct {
	AllowBareDV bool  // accept deletion vectors without the deletion-vector-v1 framing
	CacheBytes  int64 // memory cache bound; 0 = DefaultCacheBytes, < 0 = no memory cache
	// Tracker, when set, makes cached bitmaps whose delete files changed
	// since they were computed count as misses.
	Tracker *freshness.Tracker
	// Stat, when set, returns a file's current ETag: persisted bitmaps then
	// record the ETags of the data file and of every delete file they were
	// computed from and are trusted only while all of them still match,
	// and nothing is persisted for a data file whose identity the service
	// did not check (DataFile.FooterHash empty).
	Stat func(ctx context.Context, location string) (etag string, err error)
	// StoreKey seals persisted bitmaps (HMAC-SHA256, see EncodeStored):
	// only payloads sealed with it are trusted. Without one the Store is
	// not used (memory only): a bitmap anyone can write deletes rows.
	StoreKey []byte
}

// Computer computes and caches the deleted positions of data files:
//
//   - deletion vector bitmaps in memory, by (Puffin path, size, blob offset,
//     blob length);
//   - the merged position delete bitmap of a data file by (data file,
//     sorted identities of the position delete files), in memory and
//     through the Store;
//   - equality per-pair bitmaps by (data file, equality delete file), in
//     memory and through the Store, reused across snapshots.
//
// Cached bitmaps are never modified; results are fresh bitmaps.
type Computer struct {
	open  Opener
	store Store
	opt   Options
	lru   *bitmapLRU

	flight                    singleflight.Group
	hits, misses, storeHits   atomic.Int64
	computedDV, computedOther atomic.Int64
}

// NewComputer returns a Computer reading files with open and persisting
// bitmaps in store (nil, or no Options.StoreKey: memory only).
func NewComputer(open Opener, store Store, o Options) *Computer {
	capacity := o.CacheBytes
	if capacity == 0 {
		capacity = DefaultCacheBytes
	}
	if capacity < 0 {
		capacity = 0
	}
	lru := newBitmapLRU(capacity)
	lru.tracker = o.Tracker
	return &Computer{open: open, store: store, opt: o, lru: lru}
}

// Result is the outcome of Computer.Deleted.
type Result struct {
	Deleted     *roaring64.Bitmap // union of everything that applies; never nil
	Applied     int               // delete files applied
	CacheHits   int               // bitmaps served from memory or the store
	CacheMisses int               // bitmaps computed from delete files
}

// Deleted computes the deleted positions of data file d given the delete
// files that apply to it (as Index.For returns them). Positions >=
// d.RecordCount are dropped. When a deletion vector is among dels, the
// position delete files are not applied (the DV supersedes them, as in
// iceberg-go and the spec). schema and nm are needed only for equality
// deletes.
func (c *Computer) Deleted(ctx context.Context, d DataFile, dels []File, schema *iceberg.Schema, nm iceberg.NameMapping) (Result, error) {
	res := Result{Deleted: roaring64.New()}
	var dvs, pos, eqs []File
	seen := map[string]bool{}
	for _, f := range dels {
		if seen[f.Identity()] {
			continue
		}
		seen[f.Identity()] = true
		if f.Content != PositionDeletes && f.Content != EqualityDeletes {
			return Result{}, perr.New(perr.InvalidArgument, "%s: unknown delete file content %s", f.Path, f.Content)
		}
		if err := checkReadable(f, f.Content); err != nil {
			return Result{}, err
		}
		switch {
		case f.IsDV():
			if f.ReferencedDataFile != "" && f.ReferencedDataFile != d.Path {
				return Result{}, perr.New(perr.InvalidArgument, "deletion vector %s references %s, not data file %s", f.Path, f.ReferencedDataFile, d.Path)
			}
			dvs = append(dvs, f)
		case f.Content == PositionDeletes:
			pos = append(pos, f)
		default:
			eqs = append(eqs, f)
		}
	}
	if len(dvs) > 1 {
		return Result{}, perr.New(perr.InvalidArgument, "%d deletion vectors apply to data file %s (%s, %s, ...): at most one may", len(dvs), d.Path, dvs[0].Identity(), dvs[1].Identity())
	}
	if len(dvs) == 1 {
		pos = nil
		bm, hit, err := c.deletionVector(ctx, dvs[0])
		if err != nil {
			return Result{}, err
		}
		res.add(bm, 1, hit)
	}
	if len(pos) > 0 {
		bm, hit, err := c.positions(ctx, d, pos)
		if err != nil {
			return Result{}, err
		}
		res.add(bm, len(pos), hit)
	}
	if len(eqs) > 0 {
		if err := c.equality(ctx, d, eqs, schema, nm, &res); err != nil {
			return Result{}, err
		}
	}
	if d.RecordCount >= 0 {
		res.Deleted.RemoveRange(uint64(d.RecordCount), math.MaxUint64)
	}
	return res, nil
}

func (r *Result) add(bm *roaring64.Bitmap, applied int, hit bool) {
	r.Deleted.Or(bm)
	r.Applied += applied
	if hit {
		r.CacheHits++
	} else {
		r.CacheMisses++
	}
}

func (c *Computer) deletionVector(ctx context.Context, f File) (*roaring64.Bitmap, bool, error) {
	key := "dv|" + f.Identity() + "|" + strconv.FormatInt(f.RecordCount, 10) + "|" + strconv.FormatBool(c.opt.AllowBareDV)
	inputs := []string{f.Path}
	if bm := c.lookup(key, "dv", inputs); bm != nil {
		return bm, true, nil
	}
	v, err, _ := c.flight.Do(key, func() (any, error) {
		if bm := c.lru.get(key, inputs); bm != nil {
			return bm, nil
		}
		loaded := freshness.Now()
		metricRequests.WithLabelValues("dv", "miss").Inc()
		bm, err := ReadDV(ctx, c.open, f, DVOptions{AllowBare: c.opt.AllowBareDV, ExpectedCardinality: f.RecordCount})
		if err != nil {
			return nil, err
		}
		bm.RunOptimize()
		c.lru.put(key, bm, loaded)
		c.computedDV.Add(1)
		return bm, nil
	})
	if err != nil {
		return nil, false, err
	}
	return v.(*roaring64.Bitmap), false, nil
}

// positionKey is the cache key of the merged position delete bitmap.
func positionKey(d DataFile, fs []File) string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.Identity()
	}
	slices.Sort(ids)
	return "position|v1|" + strconv.Quote(d.Path) + "|" + d.Identity() + "|" + strings.Join(ids, ",")
}

func (c *Computer) positions(ctx context.Context, d DataFile, fs []File) (*roaring64.Bitmap, bool, error) {
	key := positionKey(d, fs)
	sk := StoreKey{Data: d, Name: PositionStoreName}
	inputs := make([]string, len(fs))
	for i, f := range fs {
		inputs[i] = f.Path
	}
	if bm := c.lookup(key, "position", inputs); bm != nil {
		return bm, true, nil
	}
	type out struct {
		bm  *roaring64.Bitmap
		hit bool
	}
	v, err, _ := c.flight.Do(key, func() (any, error) {
		if bm := c.lru.get(key, inputs); bm != nil {
			return out{bm, true}, nil
		}
		loaded := freshness.Now()
		if bm := c.load(ctx, sk, key, "position", inputs); bm != nil {
			c.lru.put(key, bm, loaded)
			return out{bm, true}, nil
		}
		bm := roaring64.New()
		for _, f := range fs {
			one, err := ReadPositionDeletes(ctx, c.open, f, d.Path)
			if err != nil {
				return nil, err
			}
			bm.Or(one)
		}
		if d.RecordCount >= 0 {
			bm.RemoveRange(uint64(d.RecordCount), math.MaxUint64)
		}
		bm.RunOptimize()
		c.lru.put(key, bm, loaded)
		c.save(ctx, sk, key, bm, inputs)
		c.computedOther.Add(1)
		return out{bm, false}, nil
	})
	if err != nil {
		return nil, false, err
	}
	o := v.(out)
	return o.bm, o.hit, nil
}

// equalityKey is the cache key of the per-pair bitmap of (d, f).
func equalityKey(d DataFile, f File, fingerprint string) string {
	return "equality|v1|" + strconv.Quote(d.Path) + "|" + d.Identity() + "|" + f.Identity() + "|" + fingerprint
}

func (c *Computer) equality(ctx context.Context, d DataFile, fs []File, schema *iceberg.Schema, nm iceberg.NameMapping, res *Result) error {
	keys := make([]string, len(fs))
	var missing []int
	for i, f := range fs {
		keys[i] = equalityKey(d, f, equalityFingerprint(schema, nm, f.EqualityFieldIDs))
		inputs := []string{f.Path}
		if bm := c.lookup(keys[i], "equality", inputs); bm != nil {
			res.add(bm, 1, true)
			continue
		}
		loaded := freshness.Now()
		if bm := c.load(ctx, StoreKey{Data: d, Name: EqualityStoreName(f)}, keys[i], "equality", inputs); bm != nil {
			c.lru.put(keys[i], bm, loaded)
			res.add(bm, 1, true)
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return nil
	}
	todo := make([]File, len(missing))
	flightKey := make([]string, len(missing))
	for j, i := range missing {
		todo[j] = fs[i]
		flightKey[j] = keys[i]
	}
	v, err, _ := c.flight.Do(strings.Join(flightKey, "\x00"), func() (any, error) {
		loaded := freshness.Now()
		bms, err := equalityDeletedAll(ctx, c.open, d, todo, schema, nm)
		if err != nil {
			return nil, err
		}
		for j, bm := range bms {
			if d.RecordCount >= 0 {
				bm.RemoveRange(uint64(d.RecordCount), math.MaxUint64)
			}
			bm.RunOptimize()
			c.lru.put(flightKey[j], bm, loaded)
			c.save(ctx, StoreKey{Data: d, Name: EqualityStoreName(todo[j])}, flightKey[j], bm, []string{todo[j].Path})
			c.computedOther.Add(1)
		}
		return bms, nil
	})
	if err != nil {
		return err
	}
	for _, bm := range v.([]*roaring64.Bitmap) {
		res.add(bm, 1, false)
	}
	return nil
}

// lookup returns the bitmap cached in memory under key, counting the
// request.
func (c *Computer) lookup(key, kind string, inputs []string) *roaring64.Bitmap {
	if bm := c.lru.get(key, inputs); bm != nil {
		c.hits.Add(1)
		metricRequests.WithLabelValues(kind, "hit").Inc()
		return bm
	}
	c.misses.Add(1)
	return nil
}

// load reads a persisted bitmap; anything unreadable or not sealed with
// the store key counts as absent.
func (c *Computer) load(ctx context.Context, sk StoreKey, key, kind string, inputs []string) *roaring64.Bitmap {
	if c.store != nil && len(c.opt.StoreKey) > 0 {
		if stored, ok := c.storedKey(ctx, sk, key, inputs); ok {
			payload, err := c.store.Load(ctx, sk)
			switch {
			case err != nil:
				glog.V(1).Infof("pushdown deletes: load %s of %s: %v (recomputing)", sk.Name, sk.Data.Path, err)
			case payload != nil:
				if bm, ok := DecodeStored(stored, payload, c.opt.StoreKey); ok {
					c.storeHits.Add(1)
					metricRequests.WithLabelValues(kind, "store_hit").Inc()
					return bm
				}
			}
		}
	}
	metricRequests.WithLabelValues(kind, "miss").Inc()
	return nil
}

// readOnlyKey marks a context whose computations persist nothing.
type readOnlyKey struct{}

// ReadOnly returns ctx under which Deleted computes (and reads persisted
// bitmaps) but writes nothing: for a caller who may read the table but not
// write beside it.
func ReadOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

func (c *Computer) save(ctx context.Context, sk StoreKey, key string, bm *roaring64.Bitmap, inputs []string) {
	if c.store == nil || len(c.opt.StoreKey) == 0 || ctx.Value(readOnlyKey{}) != nil {
		return
	}
	stored, ok := c.storedKey(ctx, sk, key, inputs)
	if !ok {
		return
	}
	payload, err := EncodeStored(stored, bm, c.opt.StoreKey)
	if err == nil {
		err = c.store.Save(ctx, sk, payload)
	}
	if err != nil {
		glog.V(1).Infof("pushdown deletes: save %s of %s: %v", sk.Name, sk.Data.Path, err)
	}
}

// storedKey is the key a persisted payload is written under and checked
// against: the cache key and, with Options.Stat, the current ETags of the
// data file and of every delete file it was computed from. ok is false
// when the payload must be neither trusted nor written (an unchecked data
// file identity, or an input that cannot be stat'ed).
func (c *Computer) storedKey(ctx context.Context, sk StoreKey, key string, inputs []string) (string, bool) {
	if c.opt.Stat == nil {
		return key, true
	}
	if sk.Data.FooterHash == "" {
		return "", false
	}
	var b strings.Builder
	b.WriteString(key)
	b.WriteString("|etags")
	for _, p := range append([]string{sk.Data.Path}, inputs...) {
		etag, err := c.opt.Stat(ctx, p)
		if err != nil {
			glog.V(1).Infof("pushdown deletes: stat %s: %v (not using persisted bitmaps of %s)", p, err, sk.Data.Path)
			return "", false
		}
		b.WriteString("|")
		b.WriteString(strconv.Quote(etag))
	}
	return b.String(), true
}

// CacheStats reports the memory cache: entries, bytes, capacity, and the
// memory hits, misses and evictions so far.
func (c *Computer) CacheStats() (entries, bytes, capacity, hits, misses, evictions int64) {
	e, b, ev := c.lru.stats()
	return e, b, c.lru.capacity, c.hits.Load(), c.misses.Load(), ev
}

// bitmapLRU is an LRU of bitmaps bounded by bytes (roaring's
// GetSizeInBytes plus the key): a bytelru whose entries remember when
// their inputs were read.
type bitmapLRU struct {
	capacity int64
	tracker  *freshness.Tracker
	cache    *bytelru.Cache[string, lruEntry]
}

type lruEntry struct {
	bm     *roaring64.Bitmap
	size   int64
	loaded int64 // freshness.Now() before its inputs were read
}

func newBitmapLRU(capacity int64) *bitmapLRU {
	return &bitmapLRU{capacity: capacity, cache: bytelru.New[string, lruEntry](capacity, bytelru.Options[string, lruEntry]{
		OnEvict: func(_ string, e lruEntry) { metricBytes.Sub(float64(e.size)) }})}
}

// get returns the bitmap of key unless one of the files it was computed
// from (inputs) changed since.
func (l *bitmapLRU) get(key string, inputs []string) *roaring64.Bitmap {
	stale := func(e lruEntry) bool {
		for _, p := range inputs {
			if !l.tracker.Fresh(p, e.loaded) {
				return true
			}
		}
		return false
	}
	if l.cache.RemoveIf(key, stale) {
		metricEvictions.Inc()
		return nil
	}
	if e, ok := l.cache.Get(key); ok {
		return e.bm
	}
	return nil
}

func (l *bitmapLRU) put(key string, bm *roaring64.Bitmap, loaded int64) {
	size := int64(bm.GetSizeInBytes()) + int64(len(key))
	if size > l.capacity {
		return // would evict everything and still not fit
	}
	before := l.cache.Stats().Evictions
	l.cache.Add(key, lruEntry{bm: bm, size: size, loaded: loaded}, size)
	metricBytes.Add(float64(size))
	metricEvictions.Add(float64(l.cache.Stats().Evictions - before))
}

func (l *bitmapLRU) stats() (entries, bytes, evictions int64) {
	s := l.cache.Stats()
	return s.Entries, s.Bytes, s.Evictions
}
