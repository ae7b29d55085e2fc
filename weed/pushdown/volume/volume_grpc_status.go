package volume

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pqcodec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
)

// Status reports the service, the volume server beside it and its caches.
func (s *Service) Status(ctx context.Context, req *pushdown_pb.StatusRequest) (*pushdown_pb.VolumeStatus, error) {
	if _, err := s.callerOf(ctx, "Status"); err != nil {
		return nil, err
	}
	st := s.Reader.Stats()
	caches := []*pushdown_pb.CacheStats{
		{Name: "reads.local_bytes", Bytes: st.BytesLocal},
		{Name: "reads.remote_bytes", Bytes: st.BytesRemote},
		{Name: "reads.inline_bytes", Bytes: st.BytesInline},
	}
	caches = append(caches, s.CacheStats()...)
	return &pushdown_pb.VolumeStatus{
		Version:       version.String(),
		Address:       s.Address,
		VolumeServer:  s.VolumeServer,
		Filer:         s.Filer,
		StartedUnixMs: s.started.UnixMilli(),
		Serving:       true,
		Caches:        caches,
	}, nil
}

// CacheStats reports the service's caches: the footers it checks file
// identities with, side indexes, vectors, column chunks and the delete
// bitmaps of each framing mode.
func (s *Service) CacheStats() []*pushdown_pb.CacheStats {
	fs := s.footers.Stats()
	out := []*pushdown_pb.CacheStats{{Name: "footer", Entries: fs.Entries, Bytes: fs.Bytes, CapacityBytes: fs.Capacity,
		Hits: fs.Hits, Misses: fs.Misses, Evictions: fs.Evictions}}
	ie, ib, ic, ih, im, iev := s.indexes.Stats()
	out = append(out, &pushdown_pb.CacheStats{Name: "side_index", Entries: ie, Bytes: ib, CapacityBytes: ic, Hits: ih, Misses: im, Evictions: iev})
	// The files' vectors and the predicates' answers of vector searches.
	ve, vb, vc, vh, vm, vev := s.vectorCache().Stats()
	out = append(out, &pushdown_pb.CacheStats{Name: "vectors", Entries: ve, Bytes: vb, CapacityBytes: vc, Hits: vh, Misses: vm, Evictions: vev})
	// Column chunks as stored, read by scans, filters and aggregates.
	if c := s.chunkCache(); c != nil {
		ce, cb, cc, ch, cm, cev := c.Stats()
		out = append(out, &pushdown_pb.CacheStats{Name: "chunks", Entries: ce, Bytes: cb, CapacityBytes: cc, Hits: ch, Misses: cm, Evictions: cev})
	}
	// Decoded zstd pages, process-wide (-pushdown.pageCacheMB).
	if st, hits, misses, ok := pqcodec.PageCacheStats(); ok {
		out = append(out, &pushdown_pb.CacheStats{Name: "pages", Entries: st.Entries, Bytes: st.Bytes, CapacityBytes: st.Capacity, Hits: hits, Misses: misses, Evictions: st.Evictions})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range []struct {
		name string
		c    *deletes.Computer
	}{{"deletes", s.strictDeletes}, {"deletes.bare_dv", s.bareDeletes}} {
		if c.c == nil {
			continue
		}
		entries, bytes, capacity, hits, misses, evictions := c.c.CacheStats()
		out = append(out, &pushdown_pb.CacheStats{Name: c.name, Entries: entries, Bytes: bytes, CapacityBytes: capacity,
			Hits: hits, Misses: misses, Evictions: evictions})
	}
	return out
}
