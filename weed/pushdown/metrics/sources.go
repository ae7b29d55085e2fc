package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// A Source reports, at scrape time, the caches of one running service and
// (volume services) the bytes it served by where they came from.
type Source struct {
	Service string // "catalog" or "volume"
	Caches  func() []*pushdown_pb.CacheStats
	// Reads, when set, returns bytes served from the local volume server,
	// from other volume servers, and inline in filer entries.
	Reads func() (local, remote, inline int64)
}

// AddSource reports src on every scrape until the returned function is
// called. Sources with the same service and cache name (several volume
// services in one process) are summed.
func AddSource(src Source) (remove func()) {
	return sources.add(src)
}

var (
	cacheEntries  = desc("cache_entries", "Entries held by a pushdown cache.", "service", "cache")
	cacheBytes    = desc("cache_bytes", "Bytes held by a pushdown cache.", "service", "cache")
	cacheCapacity = desc("cache_capacity_bytes", "Byte budget of a pushdown cache.", "service", "cache")
	cacheHits     = desc("cache_hits_total", "Lookups a pushdown cache answered.", "service", "cache")
	cacheMisses   = desc("cache_misses_total", "Lookups a pushdown cache missed.", "service", "cache")
	cacheEvicts   = desc("cache_evictions_total", "Entries evicted from a pushdown cache.", "service", "cache")
	readBytes     = desc("volume_read_bytes_total", "Bytes the volume pushdown services served, by source (local, remote, inline).", "source")

	sources = &sourceSet{byID: map[int]Source{}}
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, Subsystem, name), help, labels, nil)
}

type sourceSet struct {
	mu   sync.Mutex
	next int
	byID map[int]Source
}

func (s *sourceSet) add(src Source) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	s.byID[id] = src
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byID, id)
	}
}

func (s *sourceSet) snapshot() []Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Source, 0, len(s.byID))
	for _, src := range s.byID {
		out = append(out, src)
	}
	return out
}

// Describe implements prometheus.Collector.
func (s *sourceSet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheEntries, cacheBytes, cacheCapacity, cacheHits, cacheMisses, cacheEvicts, readBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *sourceSet) Collect(ch chan<- prometheus.Metric) {
	type key struct{ service, cache string }
	caches := map[key]*pushdown_pb.CacheStats{}
	var reads [3]int64
	haveReads := false
	for _, src := range s.snapshot() {
		if src.Caches != nil {
			for _, c := range src.Caches() {
				k := key{src.Service, c.GetName()}
				sum := caches[k]
				if sum == nil {
					sum = &pushdown_pb.CacheStats{}
					caches[k] = sum
				}
				sum.Entries += c.GetEntries()
				sum.Bytes += c.GetBytes()
				sum.CapacityBytes += c.GetCapacityBytes()
				sum.Hits += c.GetHits()
				sum.Misses += c.GetMisses()
				sum.Evictions += c.GetEvictions()
			}
		}
		if src.Reads != nil {
			l, r, i := src.Reads()
			reads[0], reads[1], reads[2] = reads[0]+l, reads[1]+r, reads[2]+i
			haveReads = true
		}
	}
	for k, c := range caches {
		for _, m := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v int64
		}{
			{cacheEntries, prometheus.GaugeValue, c.Entries}, {cacheBytes, prometheus.GaugeValue, c.Bytes},
			{cacheCapacity, prometheus.GaugeValue, c.CapacityBytes}, {cacheHits, prometheus.CounterValue, c.Hits},
			{cacheMisses, prometheus.CounterValue, c.Misses}, {cacheEvicts, prometheus.CounterValue, c.Evictions},
		} {
			ch <- prometheus.MustNewConstMetric(m.d, m.t, float64(m.v), k.service, k.cache)
		}
	}
	if haveReads {
		for i, src := range []string{"local", "remote", "inline"} {
			ch <- prometheus.MustNewConstMetric(readBytes, prometheus.CounterValue, float64(reads[i]), src)
		}
	}
}
