package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

// Endpoints is how the lakeclient reaches this cluster.
func (c *Cluster) Endpoints() lakeclient.Endpoints {
	return lakeclient.Endpoints{
		Catalog:   c.CatalogAddr(),
		Iceberg:   c.IcebergURI(),
		S3:        c.S3Endpoint(),
		Warehouse: c.Warehouse,
		AccessKey: c.AccessKey,
		SecretKey: c.SecretKey,
	}
}

// S3 returns an aws-sdk-go-v2 client of the cluster's S3 gateway.
func (c *Cluster) S3(t testing.TB) *s3.Client {
	t.Helper()
	return lakeclient.NewS3Client(c.Endpoints())
}

// Iceberg returns an iceberg-go REST catalog client of the cluster.
func (c *Cluster) Iceberg(t testing.TB) *rest.Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, err := lakeclient.NewIcebergCatalog(ctx, c.Endpoints())
	if err != nil {
		t.Fatalf("iceberg REST catalog at %s: %v", c.IcebergURI(), err)
	}
	return cat
}

// waitTableBucket waits until the Iceberg catalog serves the warehouse.
func waitTableBucket(ctx context.Context, c *Cluster) error {
	var last error
	for c.AccessKey != "" {
		// With S3 identities the catalog wants credentials: ask through a
		// client that has them.
		cat, err := lakeclient.NewIcebergCatalog(ctx, c.Endpoints())
		if err == nil {
			if _, err = cat.ListNamespaces(ctx, nil); err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("iceberg catalog did not serve table bucket %q: %v", c.Warehouse, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.IcebergURI()+"/v1/"+c.Warehouse+"/namespaces", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("GET namespaces: %s: %s", resp.Status, strings.TrimSpace(string(body)))
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("iceberg catalog did not serve table bucket %q: %v", c.Warehouse, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
