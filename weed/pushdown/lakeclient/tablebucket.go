package lakeclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// tableBucketAccount is the account SeaweedFS owns table buckets by when
// no identity says otherwise (s3tables.DefaultAccountID).
const tableBucketAccount = "000000000000"

// EnsureTableBucket makes sure the warehouse's table bucket exists. When
// the Iceberg REST catalog reports it missing (`weed server -s3` creates
// none; `weed mini -tableBucket` does), it is created through the S3
// gateway's S3 Tables API, the CreateTableBucket call `weed mini` makes:
//
//	Iceberg REST: list namespaces ─ ok ─────────────────────▶ (false, nil)
//	   └ "table bucket <w> not found" ─▶ S3 Tables: PUT /buckets {"name": w}
//	                                        ├ 200 ─────────────▶ (true, nil)
//	                                        └ refused ─▶ error naming the command to run
//
// Other catalog errors are left to the caller's next call to report.
func EnsureTableBucket(ctx context.Context, e Endpoints) (created bool, err error) {
	e = e.Defaults()
	cat, err := NewIcebergCatalog(ctx, e)
	if err != nil {
		return false, fmt.Errorf("iceberg REST catalog %s: %w", e.Iceberg, err)
	}
	if _, err := cat.ListNamespaces(ctx, nil); err == nil || !missingTableBucket(err, e.Warehouse) {
		return false, nil
	}
	if err := createTableBucket(ctx, e); err != nil {
		return false, fmt.Errorf("table bucket %q does not exist, and creating it through the S3 Tables API at %s failed: %w; "+
			"create it with `aws --endpoint-url %s s3tables create-table-bucket --name %s` or, in `weed shell`, "+
			"`s3tables.bucket -create -name %s -account %s`", e.Warehouse, e.S3, err, e.S3, e.Warehouse, e.Warehouse, tableBucketAccount)
	}
	return true, nil
}

// missingTableBucket says whether err is the Iceberg catalog's answer for a
// warehouse whose table bucket does not exist.
func missingTableBucket(err error, warehouse string) bool {
	return strings.Contains(err.Error(), "table bucket "+warehouse+" not found")
}

// createTableBucket calls S3 Tables CreateTableBucket, signed for the
// s3tables service with the endpoints' credentials.
func createTableBucket(ctx context.Context, e Endpoints) error {
	body, err := json.Marshal(map[string]string{"name": e.Warehouse})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimSuffix(e.S3, "/")+"/buckets", bytes.NewReader(body))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Content-Sha256", hash)
	ak, sk := e.keys()
	creds := aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk, SessionToken: e.SessionToken}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hash, "s3tables", e.Region, time.Now()); err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
}
