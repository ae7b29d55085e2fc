package volume

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
)

// Status reports the service, the volume server beside it and its caches.
func (s *Service) Status(ctx context.Context, req *pushdown_pb.StatusRequest) (*pushdown_pb.VolumeStatus, error) {
	if _, err := s.authenticate(ctx, "Status", req); err != nil {
		return nil, err
	}
	st := s.Reader.Stats()
	caches := []*pushdown_pb.CacheStats{
		{Name: "reads.local_bytes", Bytes: st.BytesLocal},
		{Name: "reads.remote_bytes", Bytes: st.BytesRemote},
		{Name: "reads.inline_bytes", Bytes: st.BytesInline},
	}
	s.mu.Lock()
	for name, c := range map[string]*deletes.Computer{"deletes": s.strictDeletes, "deletes.bare_dv": s.bareDeletes} {
		if c == nil {
			continue
		}
		entries, bytes, capacity, hits, misses, evictions := c.CacheStats()
		caches = append(caches, &pushdown_pb.CacheStats{Name: name, Entries: entries, Bytes: bytes, CapacityBytes: capacity,
			Hits: hits, Misses: misses, Evictions: evictions})
	}
	s.mu.Unlock()
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
