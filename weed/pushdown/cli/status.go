package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
)

// DefaultCatalog is where clients look for the catalog pushdown service.
const DefaultCatalog = "localhost:18181"

func init() {
	register(&subcommand{
		name:  "status",
		short: "Show whether the catalog pushdown service serves and which volume pushdown endpoints it discovered.",
		usage: "[-catalog host:port] [-json]",
		run:   runStatus,
	})
}

func runStatus(args []string) error {
	fs := newFlags(subcommands["status"])
	catalog := fs.String("catalog", DefaultCatalog, "catalog pushdown service address")
	asJSON := fs.Bool("json", false, "print the status as JSON (proto field names)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the catalog")
	if err := fs.Parse(args); err != nil {
		return err
	}
	util.LoadSecurityConfiguration()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	st, err := FetchStatus(ctx, *catalog)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true, Multiline: true}.Marshal(st)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	PrintStatus(os.Stdout, st)
	return nil
}

// FetchStatus calls PushdownCatalog.Status at address, waiting (bounded by
// ctx) for a service that is starting.
func FetchStatus(ctx context.Context, address string) (*pushdown_pb.CatalogStatus, error) {
	return fetchStatus(ctx, address, true)
}

func fetchStatus(ctx context.Context, address string, wait bool) (*pushdown_pb.CatalogStatus, error) {
	pool := grpcutil.NewConnPool(grpcutil.ClientDialOption())
	defer pool.Close()
	conn, err := pool.Get(address)
	if err != nil {
		return nil, err
	}
	req := &pushdown_pb.StatusRequest{}
	// Signed with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set (a
	// cluster with S3 identities answers only its identities).
	sctx, err := lakeclient.Endpoints{}.Defaults().SignCall(ctx, address, "Status", req)
	if err != nil {
		return nil, err
	}
	st, err := pushdown_pb.NewPushdownCatalogClient(conn).Status(sctx, req, grpc.WaitForReady(wait))
	if err != nil {
		return nil, fmt.Errorf("catalog pushdown service at %s: %w", address, err)
	}
	return st, nil
}

// PrintStatus writes a readable status.
func PrintStatus(w io.Writer, st *pushdown_pb.CatalogStatus) {
	serving := "not serving"
	if st.GetServing() {
		serving = "serving"
	}
	fmt.Fprintf(w, "catalog pushdown  %s  %s\n", st.GetAddress(), serving)
	fmt.Fprintf(w, "  version         %s\n", st.GetVersion())
	fmt.Fprintf(w, "  filer           %s\n", st.GetFiler())
	if st.GetIcebergUrl() != "" {
		fmt.Fprintf(w, "  iceberg REST    %s\n", st.GetIcebergUrl())
	}
	if st.GetS3Url() != "" {
		fmt.Fprintf(w, "  S3 gateway      %s\n", st.GetS3Url())
	}
	if len(st.GetMasters()) > 0 {
		fmt.Fprintf(w, "  masters         %v\n", st.GetMasters())
	}
	fmt.Fprintf(w, "  trust mode      %s\n", st.GetTrustMode())
	fmt.Fprintf(w, "  up since        %s\n", time.UnixMilli(st.GetStartedUnixMs()).Format(time.RFC3339))
	printPlans(w, st)
	for _, c := range st.GetCaches() {
		printCache(w, "  ", c)
	}
	healthy := 0
	for _, ep := range st.GetVolumeEndpoints() {
		if ep.GetHealthy() {
			healthy++
		}
	}
	fmt.Fprintf(w, "volume endpoints  %d healthy of %d registered\n", healthy, len(st.GetVolumeEndpoints()))
	for _, ep := range st.GetVolumeEndpoints() {
		state := "healthy"
		if !ep.GetHealthy() {
			state = "UNREACHABLE: " + ep.GetError()
		}
		fmt.Fprintf(w, "  %-22s beside volume server %-22s %s\n", ep.GetAddress(), ep.GetVolumeServer(), state)
		if ep.GetVersion() != "" {
			fmt.Fprintf(w, "      version %s\n", ep.GetVersion())
		}
		for _, c := range ep.GetCaches() {
			printCache(w, "      ", c)
		}
	}
}

func printCache(w io.Writer, indent string, c *pushdown_pb.CacheStats) {
	fmt.Fprintf(w, "%s%-22s entries=%d bytes=%d", indent, c.GetName(), c.GetEntries(), c.GetBytes())
	if c.GetCapacityBytes() > 0 {
		fmt.Fprintf(w, "/%d", c.GetCapacityBytes())
	}
	if n := c.GetHits() + c.GetMisses(); n > 0 {
		fmt.Fprintf(w, " hits=%d misses=%d (hit rate %.1f%%) evictions=%d", c.GetHits(), c.GetMisses(),
			100*float64(c.GetHits())/float64(n), c.GetEvictions())
	}
	fmt.Fprintln(w)
}

// printPlans writes the plan figures since start and the index health.
func printPlans(w io.Writer, st *pushdown_pb.CatalogStatus) {
	fmt.Fprintf(w, "  plans           %d served, %d failed", st.GetPlansServed(), st.GetPlansFailed())
	if st.GetSlowPlanMs() > 0 {
		fmt.Fprintf(w, ", %d slower than %d ms", st.GetPlansSlow(), st.GetSlowPlanMs())
	}
	fmt.Fprintln(w)
	if st.GetPlansServed() > 0 {
		fmt.Fprintf(w, "  plan latency    p50 %v  p99 %v (since start)\n",
			time.Duration(st.GetPlanP50Micros())*time.Microsecond, time.Duration(st.GetPlanP99Micros())*time.Microsecond)
	}
	if h := st.GetIndexHealth(); h != "" {
		fmt.Fprintf(w, "  side indexes    %s\n", h)
	}
}
