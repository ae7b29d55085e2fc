package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
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
}) func(context.Context) lakeclient.Endpoints {
	catalog := fs.String("catalog", DefaultCatalog, "catalog pushdown service address; its status names the Iceberg REST catalog and S3 gateway")
	iceberg := fs.String("iceberg", "", "Iceberg REST catalog URL (default: the one the catalog advertises, else "+defaultIceberg+")")
	s3 := fs.String("s3", "", "S3 gateway URL (default: the one the catalog advertises, else "+defaultS3+")")
	warehouse := fs.String("warehouse", "warehouse", "table bucket")
	return func(ctx context.Context) lakeclient.Endpoints {
		e := lakeclient.Endpoints{Catalog: *catalog, Iceberg: *iceberg, S3: *s3, Warehouse: *warehouse, Notes: os.Stderr}
		return discoverEndpoints(ctx, e, os.Stderr)
	}
}

// discoverEndpoints fills e's missing Iceberg and S3 URLs from the catalog's
// Status; when the catalog does not answer or advertises none, the local
// defaults are used and a note on w says so.
func discoverEndpoints(ctx context.Context, e lakeclient.Endpoints, w io.Writer) lakeclient.Endpoints {
	if e.Catalog == "" {
		e.Catalog = DefaultCatalog
	}
	if e.Iceberg != "" && e.S3 != "" {
		return e.Defaults()
	}
	util.LoadSecurityConfiguration()
	sctx, cancel := context.WithTimeout(ctx, statusLookup)
	defer cancel()
	st, err := fetchStatus(sctx, e.Catalog, false)
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
	return e.Defaults()
}
