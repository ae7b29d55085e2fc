package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/discovery"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
	"github.com/lakeweed/seaweedfs/weed/pushdown/volume"
	"github.com/seaweedfs/seaweedfs/weed/cluster"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/master_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc"
)

// VolumeTLSComponent is the security.toml section whose cert/key the volume
// pushdown service serves with: it runs in the volume server's process.
const VolumeTLSComponent = "grpc.volume"

// VolumePushdownOptions configure the volume pushdown service.
type VolumePushdownOptions struct {
	BindIP       string
	AdvertiseIP  string
	Port         int    // 0 picks a free port
	VolumeServer string // host:port of the volume server beside it
	Masters      []pb.ServerAddress
	Filer        pb.ServerAddress // "" = discover through the masters
	Refresh      time.Duration    // registry refresh (default 30s)
	// DeleteCacheBytes bounds cached delete bitmaps (0 = the default).
	DeleteCacheBytes int64
	// VectorCacheBytes bounds the files' vectors cached for SearchVectors
	// (0 = the default).
	VectorCacheBytes int64
	// ChunkCacheBytes bounds the column chunks (as stored) kept for scans,
	// filters and aggregates (0: none; negative: the default).
	ChunkCacheBytes int64
	// S3ConfigFile is the S3 gateway's static identity file, if any: calls
	// signed by S3 identities are checked against the same identities.
	S3ConfigFile string
	// Limits bound requests in flight and their deadlines.
	Limits ServiceLimits
	// MaxAnswerBytes bounds the decoded rows of one ReadRows or
	// SearchVectors answer (0 = the default).
	MaxAnswerBytes int64
}

// VolumePushdown is a running volume pushdown service.
type VolumePushdown struct {
	Service  *volume.Service
	iam      *access.IAM
	server   *grpc.Server
	cancel   context.CancelFunc
	done     chan struct{}
	announce chan struct{}
	unreport func() // stops reporting the service's caches and reads to /metrics
}

// VolumeMaxRequestBytes bounds one request to the volume pushdown service
// (ComputeDeletes of 1,024 files with their delete lists fits easily).
const VolumeMaxRequestBytes = 16 << 20

// NewGuard builds the access guard of a pushdown service: the cluster's S3
// identities, the service key ([jwt.filer_signing] key, else the cluster's
// key in the filer) and the table bucket lookup.
func NewGuard(ctx context.Context, filer pb.ServerAddress, dial grpc.DialOption, s3ConfigFile string) (*access.Guard, *access.IAM, error) {
	filerFn := func(fn func(filer_pb.SeaweedFilerClient) error) error {
		return pb.WithGrpcFilerClient(false, 0, filer, dial, fn)
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys, err := access.LoadKeys(kctx, util.GetViper().GetString("jwt.filer_signing.key"), filerFn)
	if err != nil {
		return nil, nil, err
	}
	iam := access.NewIAM(filer, dial, s3ConfigFile)
	return &access.Guard{IAM: iam, Keys: keys, Buckets: access.NewTableBuckets(filerFn)}, iam, nil
}

// FindFiler asks the masters for a filer of the cluster, waiting until one
// registers or ctx ends.
func FindFiler(ctx context.Context, masters []pb.ServerAddress, dial grpc.DialOption) (pb.ServerAddress, error) {
	for {
		for _, m := range masters {
			var found pb.ServerAddress
			err := pb.WithMasterClient(ctx, false, m, dial, false, func(c master_pb.SeaweedClient) error {
				resp, err := c.ListClusterNodes(ctx, &master_pb.ListClusterNodesRequest{ClientType: cluster.FilerType})
				if err != nil {
					return err
				}
				if len(resp.ClusterNodes) > 0 {
					found = pb.ServerAddress(resp.ClusterNodes[0].Address)
				}
				return nil
			})
			if err == nil && found != "" {
				return found, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no filer registered with masters %v: %w", masters, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// StartVolumePushdown listens and serves the PushdownVolume service, then
// announces it in the filer's registry so the catalog discovers it.
func StartVolumePushdown(ctx context.Context, opts VolumePushdownOptions) (*VolumePushdown, error) {
	dial := grpcutil.ClientDialOption()
	if opts.Filer == "" {
		glog.V(0).Infof("pushdown: volume service for %s waits for a filer to register with %v", opts.VolumeServer, opts.Masters)
		f, err := FindFiler(ctx, opts.Masters, dial)
		if err != nil {
			return nil, err
		}
		opts.Filer = f
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.BindIP, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("volume pushdown service: listen on port %d: %w (set -pushdown.volume.port)", opts.Port, err)
	}
	advertise := net.JoinHostPort(opts.AdvertiseIP, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	reader := fileread.New([]pb.ServerAddress{opts.Filer}, dial, opts.VolumeServer)
	svc := volume.New(advertise, opts.VolumeServer, string(opts.Filer), reader)
	if opts.DeleteCacheBytes > 0 {
		svc.DeleteCacheBytes = opts.DeleteCacheBytes
	}
	filerFn := func(fn func(filer_pb.SeaweedFilerClient) error) error {
		return pb.WithGrpcFilerClient(false, 0, opts.Filer, dial, fn)
	}
	guard, iam, err := NewGuard(ctx, opts.Filer, dial, opts.S3ConfigFile)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("volume pushdown service: %w", err)
	}
	svc.Guard = guard
	tracker := freshness.New(freshness.DefaultRemembered)
	svc.SetTracker(tracker)
	if opts.VectorCacheBytes > 0 {
		svc.SetVectorCacheBytes(opts.VectorCacheBytes)
	}
	if opts.ChunkCacheBytes >= 0 {
		svc.SetChunkCacheBytes(opts.ChunkCacheBytes)
	}
	if opts.MaxAnswerBytes > 0 {
		svc.Limits.MaxAnswerBytes = opts.MaxAnswerBytes
	}
	adm := opts.Limits.admission("volume", guard, VolumeMaxRequestBytes)
	adm.Caller = svc.Authenticate // every call's caller, before its handler
	s := grpc.NewServer(grpcutil.ServerOptions(VolumeTLSComponent, adm)...)
	pushdown_pb.RegisterPushdownVolumeServer(s, svc)
	actx, cancel := context.WithCancel(context.Background())
	go tracker.Follow(actx, opts.Filer, dial, "pushdown-volume-"+advertise)
	RegisterMetrics()
	v := &VolumePushdown{Service: svc, iam: iam, server: s, cancel: cancel, done: make(chan struct{}), announce: make(chan struct{}),
		unreport: metrics.AddSource(metrics.Source{Service: "volume", Caches: svc.CacheStats, Reads: func() (int64, int64, int64) {
			st := reader.Stats()
			return st.BytesLocal, st.BytesRemote, st.BytesInline
		}})}
	go func() {
		defer close(v.done)
		if err := s.Serve(ln); err != nil {
			glog.Errorf("volume pushdown service on %s: %v", advertise, err)
		}
	}()
	refresh := opts.Refresh
	if refresh <= 0 {
		refresh = 30 * time.Second
	}
	go func() {
		defer close(v.announce)
		discovery.Announce(actx, filerFn, discovery.Registration{
			Address: advertise, VolumeServer: opts.VolumeServer, Version: version.String(), StartedUnix: time.Now().Unix(),
		}, refresh)
	}()
	tls := "plaintext"
	if grpcutil.TLSEnabled(VolumeTLSComponent) {
		tls = "TLS"
	}
	glog.V(0).Infof("pushdown: volume service listening on %s (%s) beside volume server %s, filer %s", advertise, tls, opts.VolumeServer, opts.Filer)
	return v, nil
}

// Address is the advertised host:port.
func (v *VolumePushdown) Address() string { return v.Service.Address }

// Stop withdraws the registry entry, lets in-flight RPCs finish for up to
// timeout and cancels the rest.
func (v *VolumePushdown) Stop(timeout time.Duration) {
	v.cancel()
	<-v.announce
	grpcutil.GracefulStop(v.server, timeout)
	<-v.done
	v.unreport()
	v.iam.Close()
	glog.V(0).Infof("pushdown: volume service %s stopped", v.Service.Address)
}
