// Package volume implements the PushdownVolume gRPC service that runs beside
// a volume server: the "hands" of the design. It reads file bytes next to the
// data (preferring the chunks its own volume server holds) and, as later
// tiers land, evaluates side indexes, delete bitmaps and vector distances.
//
//	catalog / connector ──gRPC──▶ Service ──▶ fileread.Reader ──▶ local volume server
//	                                                     └──────▶ other replicas
package volume

import (
	"sync"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
)

// Limits bound what one request may ask of the service.
type Limits struct {
	MaxReadRanges  int   // ranges per ReadRanges call
	MaxReadBytes   int64 // total bytes per ReadRanges call
	MaxDeleteFiles int   // data files per ComputeDeletes call
	MaxDeleteRefs  int   // delete file references per ComputeDeletes call
}

// DefaultLimits are the limits used when none are configured.
var DefaultLimits = Limits{MaxReadRanges: 100000, MaxReadBytes: 128 << 20, MaxDeleteFiles: 1024, MaxDeleteRefs: 100_000}

// DefaultDeleteCacheBytes is the default memory for cached delete bitmaps.
const DefaultDeleteCacheBytes = 256 << 20

// Service implements pushdown_pb.PushdownVolumeServer.
type Service struct {
	pushdown_pb.UnimplementedPushdownVolumeServer

	Address      string // advertised host:port of this service
	VolumeServer string // host:port of the volume server beside it
	Filer        string // filer this service reads through
	Reader       *fileread.Reader
	Limits       Limits
	// DeleteCacheBytes bounds the in-memory delete bitmap cache.
	DeleteCacheBytes int64
	started          time.Time

	open                       deletes.Opener
	store                      deletes.Store
	mu                         sync.Mutex
	strictDeletes, bareDeletes *deletes.Computer
}

// New returns a Service reading through reader.
func New(address, volumeServer, filer string, reader *fileread.Reader) *Service {
	return &Service{Address: address, VolumeServer: volumeServer, Filer: filer, Reader: reader,
		Limits: DefaultLimits, DeleteCacheBytes: DefaultDeleteCacheBytes, started: time.Now(),
		open: indexstore.Opener(reader), store: indexstore.Filer{Reader: reader}}
}
