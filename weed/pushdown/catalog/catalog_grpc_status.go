package catalog

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
)

// Status reports whether the catalog serves and the volume endpoints it
// routes to.
func (s *Service) Status(ctx context.Context, _ *pushdown_pb.StatusRequest) (*pushdown_pb.CatalogStatus, error) {
	out := &pushdown_pb.CatalogStatus{
		Serving:       true,
		Version:       version.String(),
		Address:       s.Address,
		Filer:         s.Filer,
		Masters:       s.Masters,
		TrustMode:     s.TrustMode,
		StartedUnixMs: s.started.UnixMilli(),
	}
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
