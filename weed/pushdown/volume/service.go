// Package volume implements the PushdownVolume gRPC service that runs beside
// a volume server: the "hands" of the design. Next to the data (preferring
// the chunks its own volume server holds) it reads byte ranges, computes
// delete bitmaps, builds and evaluates side indexes, answers exact rows,
// filters rows, computes partial aggregates and runs filtered vector
// searches. One file per RPC family:
//
//	catalog / connector ──gRPC──▶ admission (grpcutil: auth tap, in-flight budget, deadline)
//	                                   │
//	                                   ▼
//	                      interceptor: Service.Authenticate (access.Guard) ─▶ the caller in the
//	                                   │ call's context; handlers: may it read (write) each file
//	                                   │ named? (only files inside table buckets, never .index/)
//	                                   ▼
//	  volume_grpc_read.go      ReadRanges       ──▶ fileread.Reader ──▶ local volume server
//	  volume_grpc_deletes.go   ComputeDeletes         (deletes.Computer)   └──▶ other replicas
//	  volume_grpc_indexes.go   BuildIndexes, EvaluateIndexes, ReadPageIndexes
//	                           (sideindex kinds; payloads trusted by the registry's SHA-256)
//	  volume_grpc_rows.go      ReadRows         exact side-index answers as rows (answer budget)
//	  volume_grpc_scan.go      ScanRows         a file's planned row groups filtered here (colfilter;
//	                           scan_pages.go: few rows decoded from the pages holding them, pagedecode),
//	                           the matching rows streamed as pieces of one Arrow IPC stream
//	  volume_grpc_aggregate.go AggregateRows    partial aggregates of a file's matching rows
//	  volume_grpc_vectors.go   SearchVectors    ivf / ivf_pq / exact, filtered (…_filter.go)
//	  volume_grpc_status.go    Status
//	                                   │
//	                                   ├──▶ chunk_cache.go: column chunks as stored, kept for warm calls
//	                                   └──▶ footer.Cache: a data file's identity before anything
//	                                        is written under its .index/
package volume

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Limits bound what one request may ask of the service.
type Limits struct {
	MaxReadRanges  int   // ranges per ReadRanges call
	MaxReadBytes   int64 // total bytes per ReadRanges call
	MaxDeleteFiles int   // data files per ComputeDeletes call
	MaxDeleteRefs  int   // delete file references per ComputeDeletes call
	// MaxAnswerBytes bounds the decoded rows one ReadRows or SearchVectors
	// call answers with (-pushdown.volume.maxAnswerMB): estimated from the
	// footer before anything is decoded, and counted as the answer is
	// built, so a call is refused before its answer fills memory.
	MaxAnswerBytes int64
}

// DefaultLimits are the limits used when none are configured.
var DefaultLimits = Limits{MaxReadRanges: 100000, MaxReadBytes: 128 << 20, MaxDeleteFiles: 1024, MaxDeleteRefs: 100_000, MaxAnswerBytes: 128 << 20}

// DefaultDeleteCacheBytes is the default memory for cached delete bitmaps.
const DefaultDeleteCacheBytes = 256 << 20

// FooterCacheBytes bounds the footers the service keeps to check data file
// identities.
const FooterCacheBytes = 32 << 20

// DefaultIndexCacheBytes bounds opened side-index payloads kept in memory.
const DefaultIndexCacheBytes = 256 << 20

// Service implements pushdown_pb.PushdownVolumeServer.
type Service struct {
	pushdown_pb.UnimplementedPushdownVolumeServer

	Address      string // advertised host:port of this service
	VolumeServer string // host:port of the volume server beside it
	Filer        string // filer this service reads through
	Reader       *fileread.Reader
	Limits       Limits
	// Guard authorizes every call (required: a service without one refuses
	// all calls).
	Guard *access.Guard
	// Tracker invalidates cached footers and bitmaps of rewritten files.
	Tracker *freshness.Tracker
	// DeleteCacheBytes bounds the in-memory delete bitmap cache.
	DeleteCacheBytes int64
	started          time.Time

	footers                    *footer.Cache
	indexes                    *indexing.IndexCache
	buildSlots                 chan struct{} // one per core: CPU-bound builds never exceed them
	buildIO                    chan struct{} // builds in flight (reading, building or committing): twice the cores
	buildsDone, buildsFailed   atomic.Int64
	open                       deletes.Opener
	store                      deletes.Store
	mu                         sync.Mutex
	strictDeletes, bareDeletes *deletes.Computer
	vecMu                      sync.Mutex
	vectors                    *indexing.IndexCache // files' vectors (SearchVectors)
	chunks                     *indexing.IndexCache // column chunks as stored (chunk_cache.go)
	chunkCacheSet              bool                 // SetChunkCacheBytes was called (0: no cache)
}

// New returns a Service reading through reader.
func New(address, volumeServer, filer string, reader *fileread.Reader) *Service {
	open := func(ctx context.Context, id footer.Identity) (footer.Source, error) {
		f, err := reader.Open(ctx, id.Path)
		if err != nil {
			return nil, err
		}
		return indexstore.Source(f), nil
	}
	return &Service{Address: address, VolumeServer: volumeServer, Filer: filer, Reader: reader,
		Limits: DefaultLimits, DeleteCacheBytes: DefaultDeleteCacheBytes, started: time.Now(),
		footers: footer.NewCache("volume", FooterCacheBytes, open), indexes: indexing.NewIndexCache(DefaultIndexCacheBytes),
		buildSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0))),
		buildIO:    make(chan struct{}, 2*max(1, runtime.GOMAXPROCS(0))),
		open:       indexstore.Opener(reader), store: indexstore.Filer{Reader: reader}}
}

// SetTracker makes the service's caches follow t.
func (s *Service) SetTracker(t *freshness.Tracker) {
	s.Tracker = t
	s.footers.Tracker = t
	s.indexes.Tracker = t
}

// Authenticate establishes a call's caller from its metadata and request
// (the gRPC server's interceptor calls it before the handler:
// grpcutil.Admission.Caller).
func (s *Service) Authenticate(ctx context.Context, method string, req proto.Message) (any, error) {
	if s.Guard == nil {
		return nil, perr.New(perr.PermissionDenied, "%s: this volume pushdown service has no access guard configured and serves no one", method)
	}
	return s.Guard.Authenticate(ctx, method, req)
}

// callerOf is the caller Authenticate established for the call of ctx;
// a call none was established for is refused.
func (s *Service) callerOf(ctx context.Context, method string) (*access.Caller, error) {
	v, ok := grpcutil.CallerOf(ctx)
	caller, _ := v.(*access.Caller)
	if !ok || caller == nil {
		return nil, grpcutil.NoCaller(method)
	}
	return caller, nil
}
