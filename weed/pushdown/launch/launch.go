// Package launch adds the -pushdown flags to upstream SeaweedFS commands and
// starts the pushdown services inside their processes.
//
//	weed mini|server|volume|s3|filer  [-pushdown ...]
//	   │ upstream Run (unchanged) ───────────────▶ master / volume / filer / S3 / Iceberg
//	   │ our goroutine: wait until the upstream service answers,
//	   │                then StartCatalogPushdown / StartVolumePushdown
//	   ▼
//	SIGINT/SIGTERM ─▶ stop pushdown services (in-flight RPCs finish or are
//	                  cancelled) ─▶ upstream shutdown hooks ─▶ exit
//
// Without -pushdown a command behaves exactly as upstream.
package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pqcodec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/restplan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/volume"
	pdserver "github.com/lakeweed/seaweedfs/weed/server"
	"github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/util"
)

// DefaultCatalogPort is the default port of the catalog pushdown service
// (the Iceberg REST catalog's 8181 + 10000, as SeaweedFS does for gRPC).
const DefaultCatalogPort = 18181

// VolumePortOffset derives a volume pushdown port from the volume server's
// gRPC port when -pushdown.volume.port is 0.
const VolumePortOffset = 10000

// StopTimeout bounds how long in-flight pushdown RPCs may run at shutdown.
const StopTimeout = 5 * time.Second

// DefaultPageCacheMB sizes the uncompressed page cache of a weed process
// running pushdown services (-pushdown.pageCacheMB): the decoded pages of
// about a million rows of the demo's five columns.
const DefaultPageCacheMB = 256

// flags is the set of -pushdown flags registered on one command.
type flags struct {
	enabled     *bool
	catalogPort *int // nil on commands without a catalog
	volumePort  *int // nil on commands without a volume server

	warehouse      *string
	footerCacheMB  *int
	coalesceGapKB  *int
	concurrency    *int
	minScanMB      *int
	minFiles       *int
	maxSelectivity *float64
	slowPlanMs     *int
	trustMode      *string
	allowBareDV    *bool
	deleteCacheMB  *int // volume side
	vectorCacheMB  *int // volume side
	chunkCacheMB   *int // volume side
	maxRequestMB   *int
	s3Config       *string // volume command: the S3 identity file

	maxInflightMB  *int           // every service
	requestTimeout *time.Duration // every service
	memoryLimitMB  *int           // the process
	pageCacheMB    *int           // the process: decoded zstd pages (pqcodec)
	maxAnswerMB    *int           // volume side

	indexReconcile   *time.Duration
	indexGrace       *time.Duration
	indexBatch       *int
	indexLeftoverAge *time.Duration // volume side

	rest   *restFlags   // catalog commands: scan planning on the Iceberg REST port
	flight *flightFlags // catalog commands: Flight SQL
}

// catalogConfig turns the flags into the catalog's configuration.
func (f *flags) catalogConfig() (catalog.Config, error) {
	c := catalog.DefaultConfig()
	mode, err := catalog.ParseTrustMode(*f.trustMode)
	if err != nil {
		return c, fmt.Errorf("-pushdown.trustMode: %w", err)
	}
	c.TrustMode = mode
	c.Warehouse = *f.warehouse
	c.FooterCacheBytes = int64(*f.footerCacheMB) << 20
	c.Plan.CoalesceGap = int64(*f.coalesceGapKB) << 10
	c.Plan.Concurrency = *f.concurrency
	c.Plan.MinScanBytes = int64(*f.minScanMB) << 20
	c.Plan.MinFiles = *f.minFiles
	c.Plan.MaxSelectivity = *f.maxSelectivity
	c.SlowPlan = time.Duration(*f.slowPlanMs) * time.Millisecond
	c.AllowBareDV = *f.allowBareDV
	c.IndexReconcileEvery, c.IndexGracePeriod, c.IndexReconcileBatch = *f.indexReconcile, *f.indexGrace, *f.indexBatch
	return c, nil
}

// limits are the services' limits of requests in flight and deadlines.
func (f *flags) limits() pdserver.ServiceLimits {
	return pdserver.ServiceLimits{MaxInflightBytes: int64(*f.maxInflightMB) << 20, RequestTimeout: *f.requestTimeout}
}

// kind says which services a command can run and where its settings live.
type kind struct {
	name    string
	catalog bool
	volume  bool
}

var kinds = []kind{
	{name: "server", catalog: true, volume: true},
	{name: "mini", catalog: true, volume: true},
	{name: "volume", volume: true},
	{name: "s3", catalog: true},
	{name: "filer", catalog: true},
}

// Install registers the flags on the upstream commands and wraps their Run.
func Install(cmds []*command.Command) {
	for _, k := range kinds {
		for _, cmd := range cmds {
			if cmd.Name() == k.name {
				install(cmd, k)
			}
		}
	}
}

func install(cmd *command.Command, k kind) {
	f := &flags{}
	what := []string{}
	if k.catalog {
		what = append(what, "the catalog pushdown service (needs the Iceberg REST catalog: -s3)")
	}
	if k.volume {
		what = append(what, "a volume pushdown service beside the volume server")
	}
	f.enabled = cmd.Flag.Bool("pushdown", false, "start "+strings.Join(what, " and "))
	f.maxInflightMB = cmd.Flag.Int("pushdown.maxInflightMB", pdserver.DefaultMaxInflightBytes>>20, "bytes of requests each pushdown service reads or serves at once, in MiB; a call past it waits (its client's flow-control window fills) until others end")
	f.requestTimeout = cmd.Flag.Duration("pushdown.requestTimeout", pdserver.DefaultRequestTimeout, "deadline of every pushdown call but BuildIndexes (work past it stops, DEADLINE_EXCEEDED); a client's earlier deadline stays; negative = none")
	f.memoryLimitMB = cmd.Flag.Int("pushdown.memoryLimitMB", 0, "soft memory limit of the whole process in MiB (Go's GOMEMLIMIT): the collector works harder near it and returns freed memory sooner; 0 = GOMEMLIMIT or none")
	f.pageCacheMB = cmd.Flag.Int("pushdown.pageCacheMB", DefaultPageCacheMB, "memory for the zstd pages this process's pushdown services decoded (scans, filters, aggregates, queries), kept by their compressed bytes so warm calls copy them instead of decompressing again; compressed and decoded bytes both count (0: none)")
	if k.catalog {
		d := catalog.DefaultConfig()
		f.catalogPort = cmd.Flag.Int("pushdown.port", DefaultCatalogPort, "catalog pushdown gRPC port")
		f.warehouse = cmd.Flag.String("pushdown.warehouse", d.Warehouse, "table bucket planned when a request names none")
		f.footerCacheMB = cmd.Flag.Int("pushdown.footerCacheMB", int(d.FooterCacheBytes>>20), "memory for cached Parquet footers, page indexes and bloom filters")
		f.coalesceGapKB = cmd.Flag.Int("pushdown.coalesceGapKB", int(d.Plan.CoalesceGap>>10), "planned byte ranges of a file closer than this are merged into one")
		f.concurrency = cmd.Flag.Int("pushdown.planConcurrency", d.Plan.Concurrency, "footers loaded in parallel by one plan")
		f.minScanMB = cmd.Flag.Int("pushdown.cost.minScanMB", int(d.Plan.MinScanBytes>>20), "cost model: below this planned scan (in at most -pushdown.cost.minFiles files) pushdown is not recommended")
		f.minFiles = cmd.Flag.Int("pushdown.cost.minFiles", d.Plan.MinFiles, "cost model: see -pushdown.cost.minScanMB")
		f.maxSelectivity = cmd.Flag.Float64("pushdown.cost.maxSelectivity", d.Plan.MaxSelectivity, "cost model: above this estimated selectivity, with little column pruning, pushdown is not recommended")
		f.slowPlanMs = cmd.Flag.Int("pushdown.slowPlanMs", int(d.SlowPlan/time.Millisecond), "plans slower than this many milliseconds are logged at -v=0 (every plan is logged at -v=1); 0 = none")
		f.trustMode = cmd.Flag.String("pushdown.trustMode", catalog.TrustConnector, "who may send client-resolved plans (data_files): "+catalog.TrustConnector+
			" (accepted as given, only over the cluster's gRPC mTLS or with a token signed with security.toml's [jwt.filer_signing] key) or "+
			catalog.TrustValidated+" (every file and delete list checked against the snapshot's manifests)")
		f.maxRequestMB = cmd.Flag.Int("pushdown.maxRequestMB", pdserver.CatalogMaxRequestBytes>>20, "largest Plan request accepted, in MiB (a larger one is refused before it is read)")
		f.indexReconcile = cmd.Flag.Duration("pushdown.index.reconcileEvery", d.IndexReconcileEvery, "side-index maintenance pass interval: each pass checks committed indexes against their payloads and data files (marking them missing, corrupt or stale and rebuilding) and expires those of files in no live snapshot; 0 = none")
		f.indexBatch = cmd.Flag.Int("pushdown.index.reconcileBatch", d.IndexReconcileBatch, "side-index registry entries one maintenance pass checks at most (the next pass resumes where it stopped)")
		f.indexGrace = cmd.Flag.Duration("pushdown.index.gracePeriod", d.IndexGracePeriod, "how long the side indexes of a data file that left every snapshot (expiry, compaction) are kept before their payloads and registry rows are removed")
		f.rest = addRESTFlags(cmd)
		f.flight = addFlightFlags(cmd)
		f.allowBareDV = cmd.Flag.Bool("pushdown.allowBareDeletionVectors", false, "accept deletion vectors written as bare roaring bitmaps without the deletion-vector-v1 framing (length, magic, CRC) by older writers")
	}
	if k.volume {
		f.volumePort = cmd.Flag.Int("pushdown.volume.port", 0, fmt.Sprintf("volume pushdown gRPC port (0 = volume gRPC port + %d)", VolumePortOffset))
		if k.name == "volume" {
			f.s3Config = cmd.Flag.String("pushdown.s3.config", "", "the S3 gateway's static identity file (its -s3.config), if it has one: calls signed with S3 credentials are checked against the same identities (identities kept in the filer are always used)")
		}
		f.indexLeftoverAge = cmd.Flag.Duration("pushdown.index.leftoverAge", volume.LeftoverAge, "temporary side-index payloads older than this, left by builds that did not finish, are removed when a build next writes beside them")
		f.deleteCacheMB = cmd.Flag.Int("pushdown.deleteCacheMB", 256, "memory for cached delete bitmaps (deletion vectors, merged position deletes, equality-delete pairs) on the volume pushdown service")
		f.maxAnswerMB = cmd.Flag.Int("pushdown.volume.maxAnswerMB", int(volume.DefaultLimits.MaxAnswerBytes>>20), "decoded rows one ReadRows or SearchVectors call (or one ScanRows batch) may answer with, in MiB (estimated from the footer before decoding, counted while decoding); past it RESOURCE_EXHAUSTED")
		f.vectorCacheMB = cmd.Flag.Int("pushdown.vectorCacheMB", 1024, "memory for the data files' vectors and the decoded row groups (vector searches, ReadRows) cached on the volume pushdown service")
		f.chunkCacheMB = cmd.Flag.Int("pushdown.chunkCacheMB", volume.DefaultChunkCacheBytes>>20, "memory for the column chunks (as stored) the volume pushdown service's scans, filters and aggregates read, kept so warm calls do not read them again (0: none)")
	}
	upstreamRun := cmd.Run
	cmd.Run = func(c *command.Command, args []string) bool {
		if *f.enabled && f.trustMode != nil {
			if _, err := f.catalogConfig(); err != nil {
				fmt.Fprintf(os.Stderr, "weed %s: %v\n", c.Name(), err)
				return false
			}
		}
		if *f.enabled {
			l := &launcher{cmd: c, kind: k, flags: f}
			l.start()
		}
		return upstreamRun(c, args)
	}
}

type launcher struct {
	cmd   *command.Command
	kind  kind
	flags *flags

	icebergPort int             // the Iceberg REST port clients use, once the front serves it
	front       *restplan.Front // nil: upstream's catalog serves its port itself
}

// str and num read an upstream flag by name; upstream may resolve defaults
// (ports, directories) after parsing, so they are read when needed.
func (l *launcher) str(name string) string {
	fl := l.cmd.Flag.Lookup(name)
	if fl == nil {
		return ""
	}
	return fl.Value.String()
}

func (l *launcher) num(name string) int {
	n, _ := strconv.Atoi(l.str(name))
	return n
}

func (l *launcher) boolean(name string) bool {
	b, _ := strconv.ParseBool(l.str(name))
	return b
}

func (l *launcher) start() {
	util.LoadSecurityConfiguration()
	pdserver.SetMemoryLimit(*l.flags.memoryLimitMB)
	pqcodec.SetPageCache(int64(max(0, *l.flags.pageCacheMB)) << 20)
	interceptSignals()
	runCatalog := l.kind.catalog
	switch l.kind.name {
	case "server", "filer":
		runCatalog = runCatalog && l.boolean("s3")
	case "mini":
		runCatalog = runCatalog && (l.cmd.Flag.Lookup("s3") == nil || l.boolean("s3"))
	}
	runVolume := l.kind.volume && (l.kind.name != "server" || l.boolean("volume"))
	if l.kind.catalog && !runCatalog {
		glog.Warningf("pushdown: -pushdown without the S3 gateway (-s3): no catalog pushdown service in this process")
	}
	if runCatalog {
		if err := l.startRESTFront(); err != nil {
			fatal(err)
		}
		go l.startCatalog()
	}
	if runVolume {
		go l.startVolume()
	}
}

// ip returns the advertised and bind addresses of the command.
func (l *launcher) ip() (advertise, bind string) {
	advertise = l.str("ip")
	bind = l.str("ip.bind")
	if advertise == "" {
		advertise = util.DetectedHostAddress()
	}
	if bind == "" {
		bind = advertise
	}
	if bind == "0.0.0.0" || bind == "::" {
		bind = ""
	}
	return
}

// filerAddress is the filer the catalog reads tables from, once known.
func (l *launcher) filerAddress() pb.ServerAddress {
	ip, _ := l.ip()
	switch l.kind.name {
	case "s3":
		return pb.ServerAddress(strings.Split(l.str("filer"), ",")[0])
	case "filer":
		return pb.NewServerAddress(ip, l.num("port"), grpcPort(l.num("port"), l.num("port.grpc")))
	default: // server, mini
		return pb.NewServerAddress(ip, l.num("filer.port"), grpcPort(l.num("filer.port"), l.num("filer.port.grpc")))
	}
}

func grpcPort(port, grpc int) int {
	if grpc == 0 {
		return port + 10000
	}
	return grpc
}

// waitReachable blocks until address accepts TCP connections.
func waitReachable(what string, address func() string) {
	start := time.Now()
	warned := false
	for {
		a := address()
		if a != "" {
			if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				c.Close()
				return
			}
		}
		if !warned && time.Since(start) > 30*time.Second {
			glog.Warningf("pushdown: still waiting for %s at %s", what, a)
			warned = true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *launcher) startCatalog() {
	waitReachable("the filer", func() string { return l.filerAddress().ToGrpcAddress() })
	advertise, bind := l.ip()
	if l.kind.name == "s3" || l.kind.name == "filer" {
		if b := l.str("s3.ip.bind"); b != "" && l.kind.name == "filer" {
			bind = b
		}
	}
	cfg, err := l.flags.catalogConfig()
	if err != nil {
		fatal(err)
	}
	c, err := pdserver.StartCatalogPushdown(pdserver.CatalogPushdownOptions{
		BindIP: bind, AdvertiseIP: advertise, Port: *l.flags.catalogPort, Filer: l.filerAddress(),
		Config: cfg, S3ConfigFile: l.s3ConfigFile(), MaxRequestBytes: *l.flags.maxRequestMB << 20, Limits: l.flags.limits(),
		IcebergURL: l.icebergURL(advertise), S3URL: l.s3URL(advertise),
	})
	if err != nil {
		fatal(err)
	}
	register(func() { c.Stop(StopTimeout) })
	if l.front != nil {
		if iam := c.IAM(); iam != nil {
			l.front.SetSigV4Verifier(iam)
		}
		l.front.SetPlanner(c.Service)
	}
	l.startFlightSQL(c, advertise, bind)
}

// s3Flag is the name of an S3 gateway flag on this command: the s3
// command's own flags, the other commands' s3.* flags.
func (l *launcher) s3Flag(name string) string {
	if l.kind.name == "s3" {
		return name
	}
	return "s3." + name
}

// s3ConfigFile is the S3 gateway's static identity file flag.
func (l *launcher) s3ConfigFile() string {
	if l.kind.name == "volume" {
		return *l.flags.s3Config
	}
	return l.str(l.s3Flag("config"))
}

// s3URL is the S3 gateway's URL at the advertised host: https when it
// serves TLS on its main port.
func (l *launcher) s3URL(host string) string {
	port := l.num(l.s3Flag("port"))
	if port == 0 {
		return ""
	}
	scheme := "http"
	if l.str(l.s3Flag("cert.file")) != "" && l.num(l.s3Flag("port.https")) == 0 {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// icebergURL is the Iceberg REST catalog's URL at the advertised host, ""
// when the command runs none.
func (l *launcher) icebergURL(host string) string {
	port := l.num(l.s3Flag("port.iceberg"))
	if l.icebergPort != 0 {
		port = l.icebergPort
	}
	if port == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

func (l *launcher) volumeAddresses() (httpAddr string, grpcAddr string, masters []pb.ServerAddress) {
	ip, _ := l.ip()
	var port, gport int
	switch l.kind.name {
	case "volume":
		port, gport = l.num("port"), l.num("port.grpc")
		for _, m := range strings.Split(firstNonEmpty(l.str("master"), l.str("mserver")), ",") {
			if m = strings.TrimSpace(m); m != "" {
				masters = append(masters, pb.ServerAddress(m))
			}
		}
	default: // server, mini
		port, gport = l.num("volume.port"), l.num("volume.port.grpc")
		masters = []pb.ServerAddress{pb.NewServerAddress(ip, l.num("master.port"), grpcPort(l.num("master.port"), l.num("master.port.grpc")))}
	}
	if port == 0 {
		return "", "", masters
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), net.JoinHostPort(ip, strconv.Itoa(grpcPort(port, gport))), masters
}

func (l *launcher) startVolume() {
	volume.LeftoverAge = *l.flags.indexLeftoverAge
	waitReachable("the volume server", func() string { _, g, _ := l.volumeAddresses(); return g })
	httpAddr, grpcAddr, masters := l.volumeAddresses()
	_, gp, _ := net.SplitHostPort(grpcAddr)
	gport, _ := strconv.Atoi(gp)
	port := *l.flags.volumePort
	if port == 0 {
		port = gport + VolumePortOffset
		if port > 65535 {
			fatal(fmt.Errorf("volume pushdown service: derived port %d (volume gRPC port %d + %d) is out of range; set -pushdown.volume.port", port, gport, VolumePortOffset))
		}
	}
	advertise, bind := l.ip()
	opts := pdserver.VolumePushdownOptions{
		BindIP: bind, AdvertiseIP: advertise, Port: port, VolumeServer: httpAddr, Masters: masters,
		DeleteCacheBytes: int64(*l.flags.deleteCacheMB) << 20, S3ConfigFile: l.s3ConfigFile(),
		VectorCacheBytes: int64(*l.flags.vectorCacheMB) << 20, ChunkCacheBytes: int64(max(0, *l.flags.chunkCacheMB)) << 20, Limits: l.flags.limits(),
		MaxAnswerBytes: int64(*l.flags.maxAnswerMB) << 20,
	}
	if l.kind.name != "volume" && (l.kind.name == "mini" || l.boolean("filer")) {
		opts.Filer = l.filerAddress()
		waitReachable("the filer", func() string { return l.filerAddress().ToGrpcAddress() })
	}
	v, err := pdserver.StartVolumePushdown(context.Background(), opts)
	if err != nil {
		fatal(err)
	}
	register(func() { v.Stop(StopTimeout) })
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func fatal(err error) {
	glog.Errorf("pushdown: %v", err)
	fmt.Fprintf(os.Stderr, "pushdown: %v\n", err)
	os.Exit(1)
}

// stoppers are the running pushdown services, stopped before upstream's
// shutdown hooks run.
var (
	stopMu   sync.Mutex
	stoppers []func()
)

func register(stop func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stoppers = append(stoppers, stop)
}

// StopAll stops every running pushdown service concurrently.
func StopAll() {
	stopMu.Lock()
	s := stoppers
	stoppers = nil
	stopMu.Unlock()
	var wg sync.WaitGroup
	for _, stop := range s {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop()
		}()
	}
	wg.Wait()
	// Upstream's interrupt handler exits without flushing glog: what the
	// pushdown services logged (plan lines, slow plans) must reach the file.
	glog.Flush()
}
