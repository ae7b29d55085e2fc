package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Where clients look when neither a flag nor the catalog's Status says.
const (
	defaultIceberg = "http://localhost:8181"
	defaultS3      = "http://localhost:8333"
)

// statusLookup bounds the Status call that finds the other services.
const statusLookup = 5 * time.Second

// endpointFlags registers the flags locating a cluster. Only -catalog is
// needed: the catalog's Status advertises the Iceberg REST catalog and S3
// gateway of its process; -iceberg and -s3 override what it says.
//
//	-catalog host:port ─▶ Status ─▶ iceberg_url, s3_url   (flags given win)
//	                  └─ no answer ─▶ localhost defaults, with a note on stderr
func endpointFlags(fs interface {
	String(name, value, usage string) *string
}) func(context.Context) (lakeclient.Endpoints, error) {
	catalog := fs.String("catalog", DefaultCatalog, "catalog pushdown service address; its status names the Iceberg REST catalog and S3 gateway")
	iceberg := fs.String("iceberg", "", "Iceberg REST catalog URL (default: the one the catalog advertises, else "+defaultIceberg+")")
	s3 := fs.String("s3", "", "S3 gateway URL (default: the one the catalog advertises, else "+defaultS3+")")
	warehouse := fs.String("warehouse", "warehouse", "table bucket")
	return func(ctx context.Context) (lakeclient.Endpoints, error) {
		e := lakeclient.Endpoints{Catalog: *catalog, Iceberg: *iceberg, S3: *s3, Warehouse: *warehouse, Notes: os.Stderr}
		return discoverEndpoints(ctx, e, os.Stderr)
	}
}

// discoverEndpoints fills e's missing Iceberg and S3 URLs from the catalog's
// Status; when the catalog does not answer or advertises none, the local
// defaults are used and a note on w says so. A catalog that refuses the
// caller is an error saying which credentials to set: the defaults would
// only fail later, further from the cause.
func discoverEndpoints(ctx context.Context, e lakeclient.Endpoints, w io.Writer) (lakeclient.Endpoints, error) {
	if e.Catalog == "" {
		e.Catalog = DefaultCatalog
	}
	if e.Iceberg != "" && e.S3 != "" {
		return e.Defaults(), nil
	}
	util.LoadSecurityConfiguration()
	sctx, cancel := context.WithTimeout(ctx, statusLookup)
	defer cancel()
	st, err := fetchStatus(sctx, e.Catalog, false)
	if c := status.Code(errors.Unwrap(err)); c == codes.PermissionDenied || c == codes.Unauthenticated {
		if key := e.Defaults().AccessKey; key != "" {
			return e, fmt.Errorf("the catalog pushdown service at %s refused access key %s (%s): "+credentialsHint, e.Catalog, perr.Quote(key), status.Convert(errors.Unwrap(err)).Message())
		}
		return e, fmt.Errorf("the catalog pushdown service at %s refuses unsigned callers (%s): "+credentialsHint, e.Catalog, status.Convert(errors.Unwrap(err)).Message())
	}
	if err == nil {
		if e.Iceberg == "" {
			e.Iceberg = st.GetIcebergUrl()
		}
		if e.S3 == "" {
			e.S3 = st.GetS3Url()
		}
	}
	var guessed []string
	if e.Iceberg == "" {
		e.Iceberg = defaultIceberg
		guessed = append(guessed, "-iceberg "+defaultIceberg)
	}
	if e.S3 == "" {
		e.S3 = defaultS3
		guessed = append(guessed, "-s3 "+defaultS3)
	}
	if len(guessed) > 0 {
		why := "advertises no URL for them"
		if err != nil {
			why = fmt.Sprintf("did not answer (%v)", err)
		}
		fmt.Fprintf(w, "note: the catalog pushdown service at %s %s; using %s\n", e.Catalog, why, strings.Join(guessed, " "))
	}
	return e.Defaults(), nil
}

// credentialsHint says which credentials a cluster with S3 identities takes.
const credentialsHint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to an identity of the cluster's S3 configuration (weed -s3.config, or s3.configure in weed shell)"
