package integration

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// With volume data encryption on, every chunk carries a cipher key: the
// volume pushdown service must fetch and decrypt whole chunks, and still
// return exactly the requested bytes.
func TestReadRangesDecryptsEncryptedChunks(t *testing.T) {
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-s3.encryptVolumeData", "-filer.encryptVolumeData", "-filer.maxMB=1"}})
	ctx := context.Background()
	client := c.S3(t)
	body := make([]byte, 3<<20+12345) // several chunks
	r := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(r.IntN(256))
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String("enc/t/data/secret.parquet"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	// The file really is stored encrypted, in several chunks.
	var entry *filer_pb.Entry
	err := pb.WithGrpcFilerClient(false, 0, pb.ServerAddress(c.FilerGrpcAddress()), grpc.WithTransportCredentials(insecure.NewCredentials()),
		func(fc filer_pb.SeaweedFilerClient) error {
			resp, err := filer_pb.LookupEntry(ctx, fc, &filer_pb.LookupDirectoryEntryRequest{Directory: "/buckets/" + c.Warehouse + "/enc/t/data", Name: "secret.parquet"})
			if err == nil {
				entry = resp.Entry
			}
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(entry.GetChunks()) < 2 || len(entry.GetChunks()[0].GetCipherKey()) == 0 {
		t.Fatalf("expected several encrypted chunks, got %d chunks, cipher key %x", len(entry.GetChunks()), entry.GetChunks()[0].GetCipherKey())
	}
	ranges := []*pushdown_pb.FileRange{{Offset: 0, Length: 10}, {Offset: 1<<20 - 5, Length: 10}, {Offset: int64(len(body)) - 100, Length: 100}, {Offset: 0, Length: int64(len(body))}}
	resp, err := c.Volume(t).ReadRanges(ctx, &pushdown_pb.ReadRangesRequest{Path: "s3://" + c.Warehouse + "/enc/t/data/secret.parquet", Ranges: ranges})
	if err != nil {
		t.Fatalf("ReadRanges over encrypted chunks: %v", err)
	}
	for i, rg := range ranges {
		if !bytes.Equal(resp.Data[i], body[rg.Offset:rg.Offset+rg.Length]) {
			t.Fatalf("range %d [%d, +%d) differs after decryption", i, rg.Offset, rg.Length)
		}
	}
}
