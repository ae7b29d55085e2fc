package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
)

// The freshness tracker's subscription to the filer stays open and hears
// a rewrite within moments, not at its next reconnection.
func TestTheFreshnessTrackerHearsARewriteOverAnOpenSubscription(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := freshness.New(100)
	go tr.Follow(ctx, pb.ServerAddress(c.FilerGrpcAddress()), grpc.WithTransportCredentials(insecure.NewCredentials()), "freshness-it")
	key := "fresh_it/t/data/x.parquet"
	put := func() {
		t.Helper()
		if _, err := c.S3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String(key), Body: bytes.NewReader([]byte("one version"))}); err != nil {
			t.Fatal(err)
		}
	}
	put()
	time.Sleep(3 * time.Second) // past any reconnection backoff of a stream that would end at once
	loaded := freshness.Now()
	put() // rewrite in place
	deadline := time.Now().Add(2 * time.Second)
	for tr.Fresh("s3://"+c.Warehouse+"/"+key, loaded) {
		if time.Now().After(deadline) {
			t.Fatalf("2 s after a rewrite the tracker still calls the old version fresh")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
