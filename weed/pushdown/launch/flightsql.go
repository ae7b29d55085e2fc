package launch

import (
	"net"
	"strconv"

	"github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lakeweed/seaweedfs/weed/pushdown/flightsql"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	pdserver "github.com/lakeweed/seaweedfs/weed/server"
)

// flightFlags are the -pushdown.flightsql.* flags of a catalog command.
type flightFlags struct {
	port *int
}

func addFlightFlags(cmd *command.Command) *flightFlags {
	return &flightFlags{
		port: cmd.Flag.Int("pushdown.flightsql.port", 0, "serve Arrow Flight SQL on this port (JDBC, ADBC, BI tools; basic auth with S3 keys): queries run through the same pushdown as `weed pushdown query`; 0 = not served"),
	}
}

// startFlightSQL serves Flight SQL beside the catalog pushdown service c,
// reading through this process's Iceberg REST catalog and S3 gateway. TLS
// when security.toml gives the S3 gateway's gRPC a certificate ([grpc.s3]);
// callers authenticate with S3 keys, not certificates. On a cluster with
// gRPC mTLS the connectors reading for a caller dial the pushdown services
// with the cluster's client certificate and sign every call with the
// caller's keys: a signed call is its signer's (see package access), so the
// reads are authorized as the caller, never as a cluster member.
func (l *launcher) startFlightSQL(c *pdserver.CatalogPushdown, advertise, bind string) {
	if l.flags.flight == nil || *l.flags.flight.port == 0 {
		return
	}
	srv, err := flightsql.New(flightsql.Config{
		Guard: c.Service.Guard,
		Endpoints: lakeclient.Endpoints{Catalog: c.Address(), Iceberg: l.icebergURL(advertise), S3: l.s3URL(advertise),
			Warehouse: *l.flags.warehouse},
	})
	if err != nil {
		fatal(err)
	}
	var opts []grpc.ServerOption
	if grpcutil.TLSEnabled(pdserver.CatalogTLSComponent) {
		v := util.GetViper()
		creds, err := credentials.NewServerTLSFromFile(v.GetString(pdserver.CatalogTLSComponent+".cert"), v.GetString(pdserver.CatalogTLSComponent+".key"))
		if err != nil {
			fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	sv, err := srv.Serve(net.JoinHostPort(bind, strconv.Itoa(*l.flags.flight.port)), opts...)
	if err != nil {
		fatal(err)
	}
	glog.V(0).Infof("pushdown: Flight SQL on %s", sv.Addr)
	register(func() { sv.Stop(StopTimeout) })
}
