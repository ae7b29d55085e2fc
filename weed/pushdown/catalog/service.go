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
	"hash/fnv"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/discovery"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// Limits bound what one Plan request may ask.
type Limits struct {
	MaxPredicateBytes int
	MaxColumns        int
	MaxDataFiles      int
	MaxDeleteRefs     int // delete file references over all data files
	MaxRowIds         int64
	MaxVectorLength   int
	Predicate         predicate.Limits
}

// DefaultLimits are the limits used unless configured.
var DefaultLimits = Limits{MaxPredicateBytes: 1 << 20, MaxColumns: 10_000, MaxDataFiles: 1_000_000, MaxDeleteRefs: 1_000_000,
	MaxRowIds: 1_000_000, MaxVectorLength: 65_536, Predicate: predicate.DefaultLimits}

// Config configures a catalog Service.
type Config struct {
	Warehouse        string // default table bucket
	FooterCacheBytes int64
	MaxManifests     int
	Plan             plan.Options
	Limits           Limits
	// TrustMode governs client-resolved plans (requests with data_files).
	TrustMode pushdown_pb.TrustMode
	// TokenKey verifies connector tokens ([jwt.filer_signing] key).
	TokenKey []byte
	// AllowBareDV accepts deletion vectors without deletion-vector-v1
	// framing (bare roaring blobs of an older writer).
	AllowBareDV bool
	// DeleteCacheBytes bounds deletes computed on the catalog itself (when
	// no volume pushdown service is reachable).
	DeleteCacheBytes int64
	// SlowPlan logs plans taking longer at V(0) (0 = none).
	SlowPlan time.Duration
	// IndexReconcileEvery paces side-index maintenance passes (0 = none);
	// IndexReconcileBatch bounds the registry entries one pass checks;
	// IndexGracePeriod is how long the indexes of a file in no live
	// snapshot are kept.
	IndexReconcileEvery time.Duration
	IndexReconcileBatch int
	IndexGracePeriod    time.Duration
}

// DefaultConfig is the configuration of the -pushdown.* flag defaults.
func DefaultConfig() Config {
	return Config{Warehouse: "warehouse", FooterCacheBytes: 256 << 20, MaxManifests: 4096, Plan: plan.DefaultOptions(), Limits: DefaultLimits,
		TrustMode: pushdown_pb.TrustMode_CONNECTOR_TRUSTED, DeleteCacheBytes: 64 << 20, SlowPlan: time.Second,
		IndexReconcileEvery: 5 * time.Minute, IndexReconcileBatch: DefaultReconcileBatch, IndexGracePeriod: time.Hour}
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
	Trust     Trust
	Pool      *grpcutil.ConnPool // connections to volume pushdown services
	Reader    *fileread.Reader
	// Deletes computes deletes on the catalog when no volume pushdown
	// service beside the data is reachable.
	Deletes *deletes.Computer
	// Guard authorizes every call (cluster mTLS, service tokens, S3
	// identities); nil = no check (in-process services in tests and
	// benchmarks only).
	Guard *access.Guard
	// Keys sign the service tokens of the catalog's own calls to volume
	// pushdown services (nil: calls carry none).
	Keys *access.Keys
	// Tracker invalidates cached footers, bitmaps and holders of rewritten
	// files (nil: entries are trusted by path and size).
	Tracker *freshness.Tracker
	// Registry records the side indexes built for each table's files.
	Registry *indexing.Registry
	builds   *buildQueue
	maint    *maintenance
	holders  *lru.Cache[string, holder]
	// predicates are the requests' predicates decoded and bound, by the
	// schema they were bound to (catalog_grpc_plan.go)
	predicates *predicate.DecodeCache
	started    time.Time
	plans      planCounters // plans served, failed, slow, latency (planlog.go)

	// IcebergURL and S3URL are the Iceberg REST catalog and S3 gateway of
	// this process, advertised by Status ("" when unknown).
	IcebergURL, S3URL string
}

// holder is the cached volume server holding most of a file's bytes.
type holder struct {
	servers []string // volume servers holding the file's chunks
	at      time.Time
}

// HolderTTL bounds how long a file's volume server location is trusted.
const HolderTTL = time.Minute

// New returns a catalog Service reading through reader.
func New(address, filer string, watcher *discovery.Watcher, reader *fileread.Reader, cfg Config, tracker *freshness.Tracker) *Service {
	open := func(ctx context.Context, id footer.Identity) (footer.Source, error) {
		f, err := reader.Open(ctx, id.Path)
		if err != nil {
			return nil, err
		}
		return indexstore.Source(f), nil
	}
	cache := footer.NewCache("catalog", cfg.FooterCacheBytes, open)
	cache.Tracker = tracker
	if cfg.TrustMode == pushdown_pb.TrustMode_TRUST_MODE_UNSPECIFIED {
		cfg.TrustMode = pushdown_pb.TrustMode_CONNECTOR_TRUSTED
	}
	holders, _ := lru.New[string, holder](100_000)
	predicates := predicate.NewDecodeCache(predicate.DefaultDecodeCacheBytes)
	var pool *grpcutil.ConnPool
	if watcher != nil {
		pool = watcher.Pool
	}
	return &Service{
		Address: address, Filer: filer, Watcher: watcher, TrustMode: cfg.TrustMode,
		Config: cfg, Tables: tables.New(reader, cfg.Warehouse, cfg.MaxManifests), Footers: cache,
		Planner: &plan.Planner{Cache: cache}, Trust: Trust{Mode: cfg.TrustMode, TokenKey: cfg.TokenKey},
		Pool: pool, Reader: reader, holders: holders, predicates: predicates, started: time.Now(), Tracker: tracker,
		builds:   newBuildQueue(),
		maint:    newMaintenance(),
		Registry: indexing.NewRegistry(func(fn func(filer_pb.SeaweedFilerClient) error) error { return reader.WithFilerClient(false, fn) }),
		Deletes:  newDeletes(reader, cfg, tracker, nil),
	}
}

// newDeletes is the catalog's delete engine; persisted bitmaps are sealed
// with storeKey (none: memory only).
func newDeletes(reader *fileread.Reader, cfg Config, tracker *freshness.Tracker, storeKey []byte) *deletes.Computer {
	return deletes.NewComputer(indexstore.Opener(reader), indexstore.Filer{Reader: reader},
		deletes.Options{AllowBareDV: cfg.AllowBareDV, CacheBytes: cfg.DeleteCacheBytes, Tracker: tracker, Stat: reader.ETag, StoreKey: storeKey})
}

// SetKeys gives the service the cluster's keys (call before serving): its
// calls to volume pushdown services carry tokens signed with them, and
// the delete bitmaps it persists are sealed with a key derived from them.
func (s *Service) SetKeys(k *access.Keys) {
	s.Keys = k
	s.Deletes = newDeletes(s.Reader, s.Config, s.Tracker, k.Derive(deletes.StoreKeyPurpose))
}

// endpointFor returns the address of the healthy volume pushdown service
// beside the volume server holding most of the file's bytes, or "" when
// there is none (the catalog then does the work itself).
func (s *Service) endpointFor(ctx context.Context, path string) string {
	if s.Watcher == nil || s.Reader == nil {
		return ""
	}
	for _, vs := range s.holderServers(ctx, path) {
		if ep, ok := s.Watcher.ForVolumeServer(vs); ok {
			return ep.Address
		}
	}
	return ""
}

// placeReads names, for each planned file, the healthy volume pushdown
// service beside a volume server holding its chunks (read_endpoint), where
// a connector reads the file's ranges (and filters or aggregates its rows)
// next to the data; files held by no healthy service are left without one
// (read through the S3 gateway). Among a file's holders the plan names the
// one it has named for the fewest of its files so far (ties: a rotation
// chosen by the file's path, so a file keeps its holder from plan to
// plan), spreading a plan's work over the replicas rather than sending it
// all to whichever server lists first.
func (s *Service) placeReads(ctx context.Context, files []*pushdown_pb.PlannedFile) {
	if s.Watcher == nil || s.Reader == nil {
		return
	}
	// A fixed pool pulling files in turn: a warm plan of thousands of files
	// (holders cached) must not start a goroutine per file, and a cold one
	// looks up at most 32 at a time.
	endpoints := make([][]string, len(files))
	safe.ForEach(len(files), 32, 1, func(i, _ int) {
		endpoints[i] = s.endpointsFor(ctx, files[i].GetFile())
	})
	named := map[string]int{}
	for i, f := range files {
		eps := endpoints[i]
		if len(eps) == 0 {
			f.ReadEndpoint = ""
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(f.GetFile()))
		start := int(h.Sum32() % uint32(len(eps)))
		best := eps[start]
		for k := 1; k < len(eps); k++ {
			if ep := eps[(start+k)%len(eps)]; named[ep] < named[best] {
				best = ep
			}
		}
		named[best]++
		f.ReadEndpoint = best
	}
}

// endpointsFor lists the healthy volume pushdown services beside the
// volume servers holding path's chunks, sorted, each once.
func (s *Service) endpointsFor(ctx context.Context, path string) []string {
	var out []string
	for _, vs := range s.holderServers(ctx, path) {
		if ep, ok := s.Watcher.ForVolumeServer(vs); ok && !slices.Contains(out, ep.Address) {
			out = append(out, ep.Address)
		}
	}
	slices.Sort(out)
	return out
}

// holderServers returns the volume servers holding the file's chunks.
// Which servers hold the file is cached; which of them has a healthy
// pushdown endpoint is for the caller to ask each time, so an endpoint
// discovered (or lost) after the lookup counts at once. A failed lookup is
// retried after a second, not after HolderTTL.
func (s *Service) holderServers(ctx context.Context, path string) []string {
	h, ok := s.holders.Get(path)
	ttl := HolderTTL
	if ok && len(h.servers) == 0 {
		ttl = time.Second
	}
	if !ok || time.Since(h.at) > ttl || !s.Tracker.Fresh(path, h.at.UnixNano()) {
		h = holder{at: time.Now()}
		if f, err := s.Reader.Open(ctx, path); err == nil {
			if hs, err := f.Holders(ctx); err == nil {
				h.servers = hs
			}
		}
		s.holders.Add(path, h)
	}
	return h.servers
}

// volumeClient returns a client of the volume pushdown service at addr and
// ctx carrying a service token scoped to the folders of the files the call
// names (the catalog's proof on every call it makes there), allowing
// writes there only for calls that persist beside the data (write).
func (s *Service) volumeClient(ctx context.Context, addr string, files []string, write bool) (context.Context, pushdown_pb.PushdownVolumeClient, error) {
	ctx, err := s.Keys.WithToken(ctx, access.DirPrefixes(files), write)
	if err != nil {
		return nil, nil, err
	}
	conn, err := s.Pool.Get(addr)
	if err != nil {
		return nil, nil, perr.Wrap(perr.Unavailable, err)
	}
	return ctx, pushdown_pb.NewPushdownVolumeClient(conn), nil
}
