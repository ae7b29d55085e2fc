// Package lakeclient builds the clients a lakeweed user (and our tests and
// CLI) needs: the S3 gateway through aws-sdk-go-v2 and the Iceberg REST
// catalog through iceberg-go, configured for one cluster.
package lakeclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// file IO for iceberg-go
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Endpoints locate one cluster's services.
type Endpoints struct {
	Catalog   string // catalog pushdown gRPC host:port
	Iceberg   string // Iceberg REST catalog URL (http://host:8181)
	S3        string // S3 gateway URL (http://host:8333)
	Warehouse string // table bucket
	AccessKey string // S3 / catalog credentials; empty = the cluster runs without auth
	SecretKey string
	// SessionToken accompanies temporary credentials (AWS_SESSION_TOKEN).
	SessionToken string
	Region       string
	// Notes, when set, is told what a client did that the caller should
	// know (the CLI's stderr): credentials the Iceberg catalog refused on
	// a cluster that serves anonymous callers, say.
	Notes io.Writer
}

// Defaults fills empty fields with the local defaults of `weed mini`, taking
// credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set.
func (e Endpoints) Defaults() Endpoints {
	if e.Catalog == "" {
		e.Catalog = "localhost:18181"
	}
	if e.Iceberg == "" {
		e.Iceberg = "http://localhost:8181"
	}
	if e.S3 == "" {
		e.S3 = "http://localhost:8333"
	}
	if e.Warehouse == "" {
		e.Warehouse = "warehouse"
	}
	if e.AccessKey == "" && e.SecretKey == "" {
		e.AccessKey, e.SecretKey, e.SessionToken = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")
	}
	if e.Region == "" {
		e.Region = "us-east-1"
	}
	if !strings.Contains(e.Iceberg, "://") {
		e.Iceberg = "http://" + e.Iceberg
	}
	if !strings.Contains(e.S3, "://") {
		e.S3 = "http://" + e.S3
	}
	return e
}

func (e Endpoints) keys() (string, string) {
	if e.AccessKey == "" {
		// A cluster without identities accepts any signature.
		return "lakeweed", "lakeweed"
	}
	return e.AccessKey, e.SecretKey
}

// NewS3Client returns a path-style S3 client of the gateway.
func NewS3Client(e Endpoints) *s3.Client {
	e = e.Defaults()
	ak, sk := e.keys()
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(e.S3),
		Region:       e.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		// The gateway does not need (or check) the new default checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// IcebergProps are the file IO properties iceberg-go uses to read and write
// table files through the S3 gateway.
func IcebergProps(e Endpoints) iceberg.Properties {
	e = e.Defaults()
	ak, sk := e.keys()
	return iceberg.Properties{
		icebergio.S3EndpointURL:     e.S3,
		icebergio.S3Region:          e.Region,
		icebergio.S3AccessKeyID:     ak,
		icebergio.S3SecretAccessKey: sk,
		"s3.path-style-access":      "true",
	}
}

// NewIcebergCatalog returns an iceberg-go REST client of the cluster's
// Iceberg catalog, scoped to the warehouse (table bucket).
//
// Credentials (AWS_ACCESS_KEY_ID, say) that the catalog refuses
// ("invalid_client": no S3 identity has them) are dropped when the catalog
// serves anonymous callers — a cluster without S3 identities, where the S3
// gateway accepts any key too — with a note on e.Notes; when it refuses
// anonymous callers as well, the error says which credentials to use.
func NewIcebergCatalog(ctx context.Context, e Endpoints) (*rest.Catalog, error) {
	e = e.Defaults()
	opts := []rest.Option{
		rest.WithWarehouseLocation("s3://" + e.Warehouse + "/"),
		rest.WithAdditionalProps(IcebergProps(e)),
	}
	if e.AccessKey == "" {
		return rest.NewCatalog(ctx, "lakeweed", e.Iceberg, opts...)
	}
	cat, err := rest.NewCatalog(ctx, "lakeweed", e.Iceberg, append(opts, rest.WithCredential(e.AccessKey+":"+e.SecretKey))...)
	if err == nil || !strings.Contains(err.Error(), "invalid_client") {
		return cat, err
	}
	anon, aerr := rest.NewCatalog(ctx, "lakeweed", e.Iceberg, opts...)
	if aerr != nil {
		return nil, fmt.Errorf("the Iceberg REST catalog at %s refused access key %s (%v) and does not serve anonymous callers: "+
			"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to an identity of the cluster's S3 configuration (weed -s3.config, or s3.configure in weed shell)",
			e.Iceberg, perr.Quote(e.AccessKey), err)
	}
	if e.Notes != nil {
		if _, noted := credentialNotes.LoadOrStore(e.Iceberg+"\x00"+e.AccessKey, true); !noted {
			fmt.Fprintf(e.Notes, "note: the Iceberg REST catalog at %s knows no identity with access key %s and serves anonymous callers "+
				"(a cluster without S3 identities): continuing without credentials; unset AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY to drop this note\n",
				e.Iceberg, perr.Quote(e.AccessKey))
		}
	}
	return anon, nil
}

// credentialNotes remembers the refused credentials already noted (one
// note per catalog and key, however many clients are made).
var credentialNotes sync.Map

// SignPlan signs a Plan request with the endpoints' S3 credentials (AWS
// Signature V4 over the request's deterministic encoding, the form the
// catalog pushdown service authenticates against the cluster's S3
// identities) and returns ctx carrying the signature as gRPC metadata.
// Without credentials ctx is returned as is (anonymous).
func (e Endpoints) SignPlan(ctx context.Context, catalogAddr string, req *pushdown_pb.ParquetPushdownRequest) (context.Context, error) {
	return e.SignCall(ctx, catalogAddr, "Plan", req)
}

// SignCall signs a call of method (as "Plan", "ReadRanges",
// "ComputeDeletes", "Status") to the pushdown service at addr the same way.
func (e Endpoints) SignCall(ctx context.Context, addr, method string, req proto.Message) (context.Context, error) {
	if e.AccessKey == "" {
		return ctx, nil
	}
	hash, err := access.PayloadHash(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+access.SignedPath(method), nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("X-Amz-Content-Sha256", hash)
	creds := aws.Credentials{AccessKeyID: e.AccessKey, SecretAccessKey: e.SecretKey, SessionToken: e.SessionToken}
	if err := v4.NewSigner().SignHTTP(ctx, creds, hr, hash, "s3", e.Region, time.Now()); err != nil {
		return nil, err
	}
	kv := []string{"authorization", hr.Header.Get("Authorization"), "x-amz-date", hr.Header.Get("X-Amz-Date"), "x-amz-content-sha256", hash,
		access.SignedHostKey, addr}
	if t := hr.Header.Get("X-Amz-Security-Token"); t != "" {
		kv = append(kv, "x-amz-security-token", t)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), nil
}

// ParseIdentifier splits "ns.table" (or "a.b.table") into an identifier.
func ParseIdentifier(s string) (table.Identifier, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("table %q: want namespace.table", s)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("table %q: empty name part", s)
		}
	}
	return parts, nil
}
