package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// On a cluster with identities, a caller that may not read a table learns
// nothing from Plan: whether the table, the snapshot, the schema or the
// column exists, or how a literal casts — every answer is the same
// PERMISSION_DENIED. Names that would leave the warehouse are invalid,
// never looked up.
func TestUnauthorizedPlansLearnNothingAboutTables(t *testing.T) {
	c := startIdentityCluster(t)
	appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 300)
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	cat := c.Catalog(t)
	probes := []struct {
		name string
		req  *pushdown_pb.ParquetPushdownRequest
	}{
		{"an existing table", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed"}},
		{"a table that does not exist", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.nosuchtable"}},
		{"a namespace that does not exist", &pushdown_pb.ParquetPushdownRequest{Table: "nosuchns.closed"}},
		{"a snapshot that does not exist", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", SnapshotId: aws.Int64(12345)}},
		{"a schema that does not exist", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", SchemaId: aws.Int32(9)}},
		{"field id 1", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", Columns: []*pushdown_pb.ColumnRef{{FieldId: 1}}}},
		{"field id 77", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", Columns: []*pushdown_pb.ColumnRef{{FieldId: 77}}}},
		{"a column name", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", Columns: []*pushdown_pb.ColumnRef{{Path: "id"}}}},
		{"a literal that does not cast", &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: []byte(`{"type":"eq","term":{"field-id":1},"value":"abc"}`)}},
	}
	for _, who := range []string{"unsigned", "alice"} {
		var first string
		for _, p := range probes {
			ctx := context.Background()
			if who == "alice" {
				var err error
				if ctx, err = alice.SignPlan(ctx, c.CatalogAddr(), p.req); err != nil {
					t.Fatal(err)
				}
			}
			_, err := cat.Plan(ctx, p.req)
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("%s plans %s: %v; want PERMISSION_DENIED", who, p.name, err)
			}
			msg := status.Convert(err).Message()
			// The message may name the table asked for, and nothing else
			// that differs.
			norm := strings.NewReplacer("acl_it.nosuchtable", "T", "nosuchns.closed", "T", "acl_it.closed", "T").Replace(msg)
			if first == "" {
				first = norm
			} else if norm != first {
				t.Fatalf("%s planning %s was told %q; planning %s was told %q", who, probes[0].name, first, p.name, norm)
			}
		}
	}

	// Names leaving the warehouse are invalid before anything is looked up
	// (unsigned, the call is refused from its headers before its body is
	// even read).
	for _, req := range []*pushdown_pb.ParquetPushdownRequest{
		{Table: "../../etc.iam"},
		{Table: "acl_it/../../etc.iam"},
		{Table: "acl_it..closed"},
		{Warehouse: "../etc", Table: "iam.identities"},
		{Warehouse: "warehouse/acl_it", Table: "x.closed"},
	} {
		if _, err := cat.Plan(context.Background(), req); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("unsigned Plan of warehouse %q table %q: %v; want PERMISSION_DENIED", req.Warehouse, req.Table, err)
		}
		ctx, err := alice.SignPlan(context.Background(), c.CatalogAddr(), req)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cat.Plan(ctx, req)
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("Plan of warehouse %q table %q: %v; want INVALID_ARGUMENT", req.Warehouse, req.Table, err)
		}
	}
}

// Strings in requests have length limits, no error echoes more than a short
// prefix of them, and a flood of requests with 100 MB table names is refused
// from their length prefix: memory stays within a small bound and the
// service keeps answering.
func TestOversizedRequestsAreRefusedWithoutGrowingMemory(t *testing.T) {
	c := sharedCluster(t)
	cat := c.Catalog(t)
	ctx := context.Background()
	long := strings.Repeat("x", 10_000) + ".t"
	for _, req := range []*pushdown_pb.ParquetPushdownRequest{
		{Table: long},
		{Table: "ns." + strings.Repeat("y", 900)},
		{Table: "demo.events", Columns: []*pushdown_pb.ColumnRef{{Path: strings.Repeat("c", 9000)}}},
		{Table: "demo.events", DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: "s3://w/" + strings.Repeat("p", 9000)}}},
	} {
		_, err := cat.Plan(ctx, req)
		if status.Code(err) == codes.OK || len(status.Convert(err).Message()) > 400 {
			t.Fatalf("a request with a long string: %v (%d-byte message); want an error of at most 400 bytes", err, len(status.Convert(err).Message()))
		}
	}

	huge := strings.Repeat("z", 100<<20)
	before := c.ProcessRSSKiB()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var peak int64
	codesSeen := map[codes.Code]int{}
	deadline := time.Now().Add(2 * time.Minute)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5 && time.Now().Before(deadline); i++ {
				_, err := cat.Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: huge})
				rss := c.ProcessRSSKiB()
				mu.Lock()
				codesSeen[status.Code(err)]++
				peak = max(peak, rss)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(codesSeen) != 1 || codesSeen[codes.ResourceExhausted] != 40 {
		t.Fatalf("40 plans with a 100 MB table name answered %v; want 40 RESOURCE_EXHAUSTED", codesSeen)
	}
	if grown := peak - before; grown > 200<<10 {
		t.Fatalf("RSS grew by %d MiB during the flood (from %d MiB); want under 200 MiB", grown>>10, before>>10)
	}
	t.Logf("RSS %d MiB before the flood, peak %d MiB during it", before>>10, peak>>10)
	if _, err := c.Catalog(t).Status(ctx, &pushdown_pb.StatusRequest{}); err != nil {
		t.Fatalf("the catalog stopped answering after the flood: %v", err)
	}
}
