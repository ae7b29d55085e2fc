package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// FixturePrefix is the key prefix the fixtures' relative paths start with.
const FixturePrefix = "data/persistent/"

// UploadFixtureTable puts every file of ../shared/testdata/iceberg-tables/<rel>
// into bucket at key data/persistent/<rel>/..., which is where the table's
// relative metadata paths point (see that folder's README). It returns the
// uploaded keys, sorted. The test is skipped when ../shared is absent.
func UploadFixtureTable(t testing.TB, c *Cluster, bucket, rel string) []string {
	t.Helper()
	root := RequireShared(t, "testdata/iceberg-tables")
	dir := filepath.Join(root, rel)
	client := c.S3(t)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		if _, herr := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); herr != nil {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
	}
	var keys []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		relPath, _ := filepath.Rel(root, p)
		key := FixturePrefix + filepath.ToSlash(relPath)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			return err
		}
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		t.Fatalf("upload fixture %s: %v", rel, err)
	}
	sort.Strings(keys)
	return keys
}
