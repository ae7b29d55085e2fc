// Package catalog implements the PushdownCatalog gRPC service that runs in
// the process serving the Iceberg REST catalog: the "brain" of the design.
// It resolves tables through SeaweedFS's own Iceberg catalog (metadata in
// the filer), plans which files, row groups, pages and byte ranges a query
// needs, and knows every volume pushdown endpoint of the cluster.
//
//	connector ──Plan──▶ Service ──▶ table metadata (filer)
//	                       │       └▶ footers (FooterCache)
//	                       │ tiers narrow one access plan per file
//	                       ▼
//	                 ParquetPushdownResponse (ranges, row groups, pages, stats)
//
//	Watcher ──▶ /etc/pushdown/volumes (filer) ──probe──▶ PushdownVolume endpoints
package catalog

import (
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/discovery"
)

// Service implements pushdown_pb.PushdownCatalogServer.
type Service struct {
	pushdown_pb.UnimplementedPushdownCatalogServer

	Address   string   // advertised host:port of this service
	Filer     string   // filer the catalog reads table metadata through
	Masters   []string // masters of the cluster, when known
	TrustMode pushdown_pb.TrustMode
	Watcher   *discovery.Watcher
	started   time.Time
}

// New returns a catalog Service.
func New(address, filer string, watcher *discovery.Watcher) *Service {
	return &Service{Address: address, Filer: filer, Watcher: watcher, TrustMode: pushdown_pb.TrustMode_CATALOG_RESOLVED, started: time.Now()}
}
