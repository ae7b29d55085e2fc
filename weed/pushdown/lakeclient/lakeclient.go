// Package lakeclient builds the clients a lakeweed user (and our tests and
// CLI) needs: the S3 gateway through aws-sdk-go-v2 and the Iceberg REST
// catalog through iceberg-go, configured for one cluster.
package lakeclient

import (
	"context"
	"net/http"
	"os"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// file IO for iceberg-go
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Endpoints locate one cluster's services.
type Endpoints struct {
	Catalog   string // catalog pushdown gRPC host:port
	Iceberg   string // Iceberg REST catalog URL (http://host:8181)
	S3        string // S3 gateway URL (http://host:8333)
	Warehouse string // table bucket
	AccessKey string // S3 / catalog credentials; empty = the cluster runs without auth
	SecretKey string
	Region    string
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
		e.AccessKey, e.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
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
func NewIcebergCatalog(ctx context.Context, e Endpoints) (*rest.Catalog, error) {
	e = e.Defaults()
	opts := []rest.Option{
		rest.WithWarehouseLocation("s3://" + e.Warehouse + "/"),
		rest.WithAdditionalProps(IcebergProps(e)),
	}
	if e.AccessKey != "" {
		opts = append(opts, rest.WithCredential(e.AccessKey+":"+e.SecretKey))
	}
	return rest.NewCatalog(ctx, "lakeweed", e.Iceberg, opts...)
}
