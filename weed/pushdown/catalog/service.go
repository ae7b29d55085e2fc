// Package catalog implements the PushdownCatalog gRPC service that runs in
// the process serving the Iceberg REST catalog: the "brain" of the design.
// It resolves tables through SeaweedFS's own Iceberg catalog (metadata in
// the filer), plans which files, row groups, pages and byte ranges a query
// needs, and knows every volume pushdown endpoint of the cluster.
//
//	connector ──Plan──▶ Service ──▶ tables.Resolver (metadata, manifests: filer)
//	                       │       └▶ footer.Cache (footers, page indexes, blooms)
//	                       │ plan.Planner: tiers narrow one access plan per file
//	                       ▼
//	                 ParquetPushdownResponse (ranges, row groups, pages, stats)
//
//	discovery.Watcher ──▶ /etc/pushdown/volumes (filer) ──probe──▶ PushdownVolume endpoints
package catalog

import (
	"context"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/discovery"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// Limits bound what one Plan request may ask.
type Limits struct {
	MaxPredicateBytes int
	MaxColumns        int
	MaxDataFiles      int
	Predicate         predicate.Limits
}

// DefaultLimits are the limits used unless configured.
var DefaultLimits = Limits{MaxPredicateBytes: 1 << 20, MaxColumns: 10_000, MaxDataFiles: 1_000_000, Predicate: predicate.DefaultLimits}

// Config configures a catalog Service.
type Config struct {
	Warehouse        string // default table bucket
	FooterCacheBytes int64
	MaxManifests     int
	Plan             plan.Options
	Limits           Limits
}

// DefaultConfig is the configuration of the -pushdown.* flag defaults.
func DefaultConfig() Config {
	return Config{Warehouse: "warehouse", FooterCacheBytes: 256 << 20, MaxManifests: 4096, Plan: plan.DefaultOptions(), Limits: DefaultLimits}
}

// Service implements pushdown_pb.PushdownCatalogServer.
type Service struct {
	pushdown_pb.UnimplementedPushdownCatalogServer

	Address   string   // advertised host:port of this service
	Filer     string   // filer the catalog reads table metadata through
	Masters   []string // masters of the cluster, when known
	TrustMode pushdown_pb.TrustMode
	Watcher   *discovery.Watcher
	Config    Config
	Tables    *tables.Resolver
	Footers   *footer.Cache
	Planner   *plan.Planner
	started   time.Time
}

// New returns a catalog Service reading through reader.
func New(address, filer string, watcher *discovery.Watcher, reader *fileread.Reader, cfg Config) *Service {
	open := func(ctx context.Context, id footer.Identity) (footer.Source, error) {
		f, err := reader.Open(ctx, id.Path)
		if err != nil {
			return nil, err
		}
		return fileSource{f}, nil
	}
	cache := footer.NewCache("catalog", cfg.FooterCacheBytes, open)
	return &Service{
		Address: address, Filer: filer, Watcher: watcher, TrustMode: pushdown_pb.TrustMode_CATALOG_RESOLVED,
		Config: cfg, Tables: tables.New(reader, cfg.Warehouse, cfg.MaxManifests), Footers: cache,
		Planner: &plan.Planner{Cache: cache}, started: time.Now(),
	}
}

type fileSource struct{ f *fileread.File }

func (s fileSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return s.f.ReadAtContext(ctx, p, off)
}
func (s fileSource) Size() int64 { return s.f.Size }
