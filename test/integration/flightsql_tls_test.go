package integration

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

// On a cluster with gRPC mTLS and S3 identities, Flight SQL serves over the
// cluster's TLS, and what it reads for a caller is authorized as that
// caller, not as the cluster member whose certificate carries the reads: a
// pushdown call signed with a user's keys is the user's even over the
// cluster certificate (an unsigned one stays the cluster's): alice, who
// may read only fsql_it/open*, is refused a Plan of fsql_tls.events she
// signs and every read of it over Flight SQL, while admin plans and reads
// it; a plaintext client gets nothing.
func TestFlightSQLOverTheClusterTLSReadsAsItsCallerNotAsAClusterMember(t *testing.T) {
	port := harness.FreePorts(t, 1)[0]
	var tlsCfg *tls.Config
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) {
			tlsCfg = writePKI(t, dir)
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(flightIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json", "-pushdown.flightsql.port=" + strconv.Itoa(port)},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
		Dial: grpc.WithTransportCredentials(credentials.NewTLS(nilSafe(&tlsCfg))),
	})
	e := c.Endpoints()
	// the CLI runs in the cluster directory: it reads security.toml there
	adminEnv := []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}
	for _, name := range []string{"fsql_tls.events"} {
		out, errOut, err := harness.WeedEnv(t, c.Dir, adminEnv, "pushdown", "demo", "-table", name, "-rows", "6000", "-files", "2", "-rowGroupRows", "1500",
			"-indexed", "none", "-catalog", c.CatalogAddr(), "-iceberg", e.Iceberg, "-s3", e.S3, "-warehouse", e.Warehouse)
		if err != nil {
			t.Fatalf("weed pushdown demo %s: %v\n%s%s", name, err, out, errOut)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The catalog pushdown service, called over the cluster certificate.
	conn, err := grpc.NewClient(c.CatalogAddr(), grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	catalog := pushdown_pb.NewPushdownCatalogClient(conn)
	plan := func(who *lakeclient.Endpoints, table string) (*pushdown_pb.ParquetPushdownResponse, error) {
		req := &pushdown_pb.ParquetPushdownRequest{Table: table, Warehouse: e.Warehouse}
		callCtx := ctx
		if who != nil {
			if callCtx, err = who.SignPlan(ctx, c.CatalogAddr(), req); err != nil {
				t.Fatal(err)
			}
		}
		return catalog.Plan(callCtx, req)
	}
	signer := func(key, secret string) *lakeclient.Endpoints {
		who := c.Endpoints()
		who.AccessKey, who.SecretKey = key, secret
		return &who
	}
	if _, err := plan(signer("AKALICE000000000", "alice-secret"), "fsql_tls.events"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("alice's signed Plan over the cluster certificate: %v, want PERMISSION_DENIED (a signed call is its signer's)", err)
	}
	if resp, err := plan(signer("AKADMIN000000000", "admin-secret"), "fsql_tls.events"); err != nil || len(resp.GetFiles()) != 2 {
		t.Errorf("admin's signed Plan over the cluster certificate: %d files, %v; want 2 files", len(resp.GetFiles()), err)
	}
	if resp, err := plan(nil, "fsql_tls.events"); err != nil || len(resp.GetFiles()) != 2 {
		t.Errorf("an unsigned Plan over the cluster certificate (a cluster member): %d files, %v; want 2 files", len(resp.GetFiles()), err)
	}

	// Flight SQL over TLS: the caller trusts the cluster CA, presents no
	// certificate and logs in with S3 keys.
	serverOnly := &tls.Config{RootCAs: tlsCfg.RootCAs, ServerName: "127.0.0.1"}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	client, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(serverOnly)))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	login := func(user, pass string) context.Context {
		t.Helper()
		who, err := client.Client.AuthenticateBasicToken(ctx, user, pass)
		if err != nil {
			t.Fatalf("basic auth as %s over TLS: %v", user, err)
		}
		return who
	}
	adminCtx, aliceCtx := login("AKADMIN000000000", "admin-secret"), login("AKALICE000000000", "alice-secret")
	const q = "SELECT id, status FROM fsql_tls.events WHERE id >= 0"
	if n, err := readAll(client, adminCtx, q); err != nil || n != 6000 {
		t.Errorf("admin reads over Flight SQL with TLS: %d rows, %v; want 6000", n, err)
	}
	if n, err := readAll(client, aliceCtx, q); err == nil {
		t.Errorf("alice read %d rows over Flight SQL, want a refusal", n)
	} else if code := status.Code(err); code != codes.PermissionDenied && code != codes.NotFound {
		t.Errorf("alice reading: %v, want PERMISSION_DENIED or NOT_FOUND", err)
	}
	plain, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if _, err := plain.Client.AuthenticateBasicToken(short, "AKADMIN000000000", "admin-secret"); err == nil {
		t.Errorf("the TLS Flight SQL endpoint answered a plaintext client")
	}
}
