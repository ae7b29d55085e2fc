// Package server bootstraps the two pushdown gRPC services inside SeaweedFS
// processes: listeners, TLS from security.toml, registration and discovery.
// The services' logic lives under weed/pushdown.
package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/discovery"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc"
)

// CatalogTLSComponent is the security.toml section whose cert/key the
// catalog pushdown service serves with: it runs in the S3 gateway's process.
const CatalogTLSComponent = "grpc.s3"

// CatalogPushdownOptions configure the catalog pushdown service.
type CatalogPushdownOptions struct {
	BindIP      string           // listen address ("" = all interfaces)
	AdvertiseIP string           // host clients reach this process at
	Port        int              // 0 picks a free port
	Filer       pb.ServerAddress // filer holding the tables
	Discovery   time.Duration    // registry refresh interval (default 2s)
	Config      catalog.Config   // planner, caches, limits
	// S3ConfigFile is the S3 gateway's static identity file (-s3.config),
	// if any: plans are authorized by the same identities.
	S3ConfigFile string
	// MaxRequestBytes bounds one Plan request (0 = CatalogMaxRequestBytes).
	MaxRequestBytes int
	// Limits bound requests in flight and their deadlines.
	Limits ServiceLimits
	// IcebergURL and S3URL are the process's Iceberg REST catalog and S3
	// gateway, advertised in Status so clients need only this address.
	IcebergURL, S3URL string
}

// CatalogMaxRequestBytes is the default bound of one request to the catalog
// pushdown service: a larger one is refused from its length prefix before
// it is read (client-resolved plans of about 80,000 files fit).
const CatalogMaxRequestBytes = 16 << 20

// CatalogPushdown is a running catalog pushdown service.
type CatalogPushdown struct {
	Service  *catalog.Service
	iam      *access.IAM
	server   *grpc.Server
	listener net.Listener
	cancel   context.CancelFunc
	pool     *grpcutil.ConnPool
	done     chan struct{}
	unreport func() // stops reporting the service's caches to /metrics
}

// StartCatalogPushdown listens and serves the PushdownCatalog service.
func StartCatalogPushdown(opts CatalogPushdownOptions) (*CatalogPushdown, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.BindIP, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("catalog pushdown service: listen on port %d: %w (set -pushdown.port)", opts.Port, err)
	}
	dial := grpcutil.ClientDialOption()
	filerFn := func(fn func(filer_pb.SeaweedFilerClient) error) error {
		return pb.WithGrpcFilerClient(false, 0, opts.Filer, dial, fn)
	}
	pool := grpcutil.NewConnPool(dial)
	guard, iam, err := NewGuard(context.Background(), opts.Filer, dial, opts.S3ConfigFile)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("catalog pushdown service: %w", err)
	}
	watcher := discovery.NewWatcher(filerFn, pool)
	watcher.Credentials = guard.Keys.WithClusterToken
	if opts.Discovery > 0 {
		watcher.Interval = opts.Discovery
	}
	advertise := net.JoinHostPort(opts.AdvertiseIP, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	reader := fileread.New([]pb.ServerAddress{opts.Filer}, dial, "")
	if opts.Config.FooterCacheBytes == 0 {
		opts.Config = catalog.DefaultConfig()
	}
	if key := util.GetViper().GetString("jwt.filer_signing.key"); key != "" && len(opts.Config.TokenKey) == 0 {
		opts.Config.TokenKey = []byte(key)
	}
	tlsOn := grpcutil.TLSEnabled(CatalogTLSComponent)
	if !(catalog.Trust{Mode: opts.Config.TrustMode, TokenKey: opts.Config.TokenKey}).Usable(tlsOn) {
		glog.Warningf("pushdown: trust mode %s without gRPC mTLS ([grpc.s3] in security.toml) or a [jwt.filer_signing] key: requests carrying client-resolved data_files will be refused; catalog-resolved plans work (or use -pushdown.trustMode=%s)",
			catalog.TrustModeName(opts.Config.TrustMode), catalog.TrustValidated)
	}
	tracker := freshness.New(freshness.DefaultRemembered)
	svc := catalog.New(advertise, string(opts.Filer), watcher, reader, opts.Config, tracker)
	svc.Guard = guard
	svc.SetKeys(guard.Keys)
	svc.IcebergURL, svc.S3URL = opts.IcebergURL, opts.S3URL
	if masters, err := filerMasters(filerFn); err == nil {
		svc.Masters = masters
	}
	RegisterMetrics()
	maxReq := opts.MaxRequestBytes
	if maxReq <= 0 {
		maxReq = CatalogMaxRequestBytes
	}
	adm := opts.Limits.admission("catalog", guard, maxReq)
	adm.OnRefused = svc.RefusedBeforeRead
	adm.Caller = svc.Authenticate // every call's caller, before its handler
	s := grpc.NewServer(grpcutil.ServerOptions(CatalogTLSComponent, adm)...)
	pushdown_pb.RegisterPushdownCatalogServer(s, svc)
	ctx, cancel := context.WithCancel(context.Background())
	c := &CatalogPushdown{Service: svc, iam: iam, server: s, listener: ln, cancel: cancel, pool: pool, done: make(chan struct{}),
		unreport: metrics.AddSource(metrics.Source{Service: "catalog", Caches: svc.CacheStats})}
	go watcher.Run(ctx)
	go svc.RunMaintenance(ctx)
	tracker.OnDirectoryUpdate = svc.OnTableEntryUpdate
	metrics.IndexPayloads = svc.Registry.CountByState
	go tracker.Follow(ctx, opts.Filer, dial, "pushdown-catalog-"+advertise)
	go func() {
		defer close(c.done)
		if err := s.Serve(ln); err != nil {
			glog.Errorf("catalog pushdown service on %s: %v", advertise, err)
		}
	}()
	tls := "plaintext"
	if tlsOn {
		tls = "TLS"
	}
	glog.V(0).Infof("pushdown: catalog service listening on %s (%s, trust mode %s), tables from filer %s", advertise, tls, catalog.TrustModeName(opts.Config.TrustMode), opts.Filer)
	return c, nil
}

// Address is the advertised host:port.
func (c *CatalogPushdown) Address() string { return c.Service.Address }

// IAM is the S3 identity check the service authorizes callers with (the
// S3 gateway's identities).
func (c *CatalogPushdown) IAM() *access.IAM { return c.iam }

// Stop lets in-flight RPCs finish for up to timeout, cancels the rest and
// stops discovery.
func (c *CatalogPushdown) Stop(timeout time.Duration) {
	grpcutil.GracefulStop(c.server, timeout)
	c.unreport()
	c.iam.Close()
	c.cancel()
	c.pool.Close()
	<-c.done
	glog.V(0).Infof("pushdown: catalog service %s stopped", c.Service.Address)
}

func filerMasters(filerFn discovery.FilerFunc) ([]string, error) {
	var masters []string
	err := filerFn(func(c filer_pb.SeaweedFilerClient) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := c.GetFilerConfiguration(ctx, &filer_pb.GetFilerConfigurationRequest{})
		if err != nil {
			return err
		}
		masters = resp.Masters
		return nil
	})
	return masters, err
}
