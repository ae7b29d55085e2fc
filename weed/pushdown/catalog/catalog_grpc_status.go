package catalog

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
)

// Status reports whether the catalog serves and the volume endpoints it
// routes to.
func (s *Service) Status(ctx context.Context, req *pushdown_pb.StatusRequest) (*pushdown_pb.CatalogStatus, error) {
	if _, err := s.callerOf(ctx, "Status"); err != nil {
		return nil, err
	}
	out := &pushdown_pb.CatalogStatus{
		Serving:       true,
		Version:       version.String(),
		Address:       s.Address,
		Filer:         s.Filer,
		Masters:       s.Masters,
		TrustMode:     s.TrustMode,
		StartedUnixMs: s.started.UnixMilli(),
		IcebergUrl:    s.IcebergURL,
		S3Url:         s.S3URL,
	}
	out.Caches = s.CacheStats()
	if s.Footers != nil {
		out.Caches = append(out.Caches, &pushdown_pb.CacheStats{Name: "footer_read_bytes", Bytes: s.Footers.Stats().ReadBytes})
	}
	s.addPlanStatus(out)
	if s.Watcher != nil {
		for _, ep := range s.Watcher.Endpoints() {
			ve := &pushdown_pb.VolumeEndpoint{
				Address:        ep.Address,
				VolumeServer:   ep.VolumeServer,
				Version:        ep.Version,
				Healthy:        ep.Healthy,
				LastSeenUnixMs: ep.LastSeen.UnixMilli(),
				Error:          ep.LastError,
			}
			if ep.LastSeen.IsZero() {
				ve.LastSeenUnixMs = 0
			}
			if ep.Status != nil {
				ve.Caches = ep.Status.GetCaches()
			}
			out.VolumeEndpoints = append(out.VolumeEndpoints, ve)
		}
	}
	return out, nil
}

// CacheStats reports the catalog's caches: footers, bloom filters and the
// delete bitmaps computed on the catalog.
func (s *Service) CacheStats() []*pushdown_pb.CacheStats {
	var out []*pushdown_pb.CacheStats
	if s.Footers != nil {
		fs := s.Footers.Stats()
		out = append(out,
			&pushdown_pb.CacheStats{Name: "footer", Entries: fs.Entries, Bytes: fs.Bytes, CapacityBytes: fs.Capacity,
				Hits: fs.Hits, Misses: fs.Misses, Evictions: fs.Evictions},
			&pushdown_pb.CacheStats{Name: "bloom_filter", Entries: fs.BloomEntries, Bytes: fs.BloomBytes, CapacityBytes: fs.Capacity,
				Hits: fs.BloomHits, Misses: fs.BloomMisses, Evictions: fs.BloomEvictions})
	}
	if s.Deletes != nil {
		entries, bytes, capacity, hits, misses, evictions := s.Deletes.CacheStats()
		out = append(out, &pushdown_pb.CacheStats{Name: "deletes.on_catalog", Entries: entries, Bytes: bytes,
			CapacityBytes: capacity, Hits: hits, Misses: misses, Evictions: evictions})
	}
	return out
}
