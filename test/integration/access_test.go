package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

const accessIdentities = `{
  "identities": [
    {"name": "admin", "credentials": [{"accessKey": "AKADMIN000000000", "secretKey": "admin-secret"}],
     "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
    {"name": "alice", "credentials": [{"accessKey": "AKALICE000000000", "secretKey": "alice-secret"}],
     "actions": ["Read:warehouse/acl_it/open*", "List:warehouse"]}
  ]
}`

// With S3 identities configured, a Plan must be signed with the caller's
// S3 credentials, and an identity that may not read a table's files cannot
// plan over them — the same answer the S3 gateway gives for the bytes.
func TestPlansAreAuthorizedByTheCallersS3Identity(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := startIdentityCluster(t)
	open := appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 300)
	closed := appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 300)
	ctx := context.Background()
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"

	plan := func(e lakeclient.Endpoints, signed, sent *pushdown_pb.ParquetPushdownRequest) error {
		t.Helper()
		pctx := ctx
		if e.AccessKey != "" {
			var err error
			if pctx, err = e.SignPlan(ctx, c.CatalogAddr(), signed); err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.Catalog(t).Plan(pctx, sent)
		return err
	}
	openReq := &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.open"}
	closedReq := &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.closed"}
	denied := func(what string, err error, want string) {
		t.Helper()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), want) {
			t.Fatalf("%s: %v; want PERMISSION_DENIED mentioning %q", what, err, want)
		}
	}
	if err := plan(c.Endpoints(), closedReq, closedReq); err != nil {
		t.Fatalf("admin plans acl_it.closed: %v", err)
	}
	if err := plan(alice, openReq, openReq); err != nil {
		t.Fatalf("alice plans acl_it.open, which she may read: %v", err)
	}
	denied("alice plans acl_it.closed", plan(alice, closedReq, closedReq), `identity "alice" may not read`)
	denied("an unsigned plan", plan(lakeclient.Endpoints{}, closedReq, closedReq), "signature was not accepted")
	denied("a signature over another request", plan(alice, openReq, closedReq), "payload hash does not match")
	wrong := alice
	wrong.SecretKey = "not-alices-secret"
	denied("a signature with the wrong secret", plan(wrong, openReq, openReq), "signature was not accepted")

	// The S3 gateway answers the same for the bytes.
	s3c := lakeclient.NewS3Client(alice)
	for _, tc := range []struct {
		name    string
		allowed bool
	}{{"acl_it.open", true}, {"acl_it.closed", false}} {
		src := map[string]bool{"acl_it.open": true}[tc.name]
		tbl := closed
		if src {
			tbl = open
		}
		files, err := tbl.Scan().PlanFiles(ctx)
		if err != nil || len(files) == 0 {
			t.Fatalf("plan files of %s: %v", tc.name, err)
		}
		bucket, key, _ := strings.Cut(strings.TrimPrefix(files[0].File.FilePath(), "s3://"), "/")
		_, err = s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if (err == nil) != tc.allowed {
			t.Fatalf("alice HEAD %s through S3: %v (want allowed = %v)", files[0].File.FilePath(), err, tc.allowed)
		}
	}

	// The CLI signs with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (an
	// unsigned plan would be refused, as above).
	out, errOut, err := harness.WeedEnv(t, c.Dir, []string{"AWS_ACCESS_KEY_ID=" + c.AccessKey, "AWS_SECRET_ACCESS_KEY=" + c.SecretKey},
		"pushdown", "plan", "-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-table", "acl_it.closed")
	if err != nil {
		t.Fatalf("admin's CLI plan of acl_it.closed: %v\n%s%s", err, out, errOut)
	}
}
