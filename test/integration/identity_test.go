package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// A data file rewritten in place with the same size but other bytes is not
// served its old cached footer: the catalog follows the filer's metadata
// events, reloads the footer and plans with what the file says now. A file
// truncated under a cached footer is refused with FAILED_PRECONDITION
// naming both sizes, not read with a stale footer.
func TestARewriteOfTheSameSizeIsPlannedFromTheNewFooter(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"ident_it"}, nil)
	// No column metrics in the manifest: only the footer can prune.
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ident_it", "t"}, deleteSchema(),
		catalog.WithProperties(iceberg.Properties{"write.metadata.metrics.default": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendRows(t, tbl, 0, 300)
	files := filesOf(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d data files, want 1", len(files))
	}
	loc := files[0]
	key := strings.TrimPrefix(loc, "s3://"+c.Warehouse+"/")

	plan := func() (*pushdown_pb.ParquetPushdownResponse, error) {
		return c.Catalog(t).Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: "ident_it.t", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: []byte(`{"type":"eq","term":{"field-id":1},"value":5000}`)})
	}
	rowGroups := func(resp *pushdown_pb.ParquetPushdownResponse) int {
		return len(resp.GetRowGroups())
	}
	resp, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	if rowGroups(resp) != 0 {
		t.Fatalf("id = 5000 plans %d row groups of a file whose ids stop at 299; want 0", rowGroups(resp))
	}

	// Same size, other footer: every id statistic 299 becomes 2^40.
	obj, err := c.S3(t).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	metaLen := int(binary.LittleEndian.Uint32(orig[len(orig)-8:]))
	footerStart := len(orig) - 8 - metaLen
	var from, to [8]byte
	binary.LittleEndian.PutUint64(from[:], 299)
	binary.LittleEndian.PutUint64(to[:], 1<<40)
	patched := bytes.Clone(orig)
	if n := bytes.Count(patched[footerStart:], from[:]); n == 0 {
		t.Fatalf("the footer holds no id statistic 299")
	}
	copy(patched[footerStart:], bytes.ReplaceAll(patched[footerStart:], from[:], to[:]))
	if len(patched) != len(orig) || bytes.Equal(patched, orig) {
		t.Fatalf("the rewrite must keep the size and change bytes")
	}
	put := func(b []byte) {
		t.Helper()
		if _, err := c.S3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	put(patched)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err = plan()
		if err != nil {
			t.Fatal(err)
		}
		if rowGroups(resp) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a same-size rewrite the plan still prunes with the old footer")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Truncated under the cached footer: refused, naming both sizes.
	put(orig[:len(orig)/2])
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err = plan()
		if status.Code(err) == codes.FailedPrecondition {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after truncation Plan answers %v; want FAILED_PRECONDITION", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, "has "+itoa(len(orig)/2)+" bytes") || !strings.Contains(msg, "says "+itoa(len(orig))) {
		t.Fatalf("truncation refused with %q; want both sizes named", msg)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
