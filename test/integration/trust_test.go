package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
)

// clientResolved describes the current snapshot of a table the way a
// connector does (iceberg-go's planning).
func clientResolved(t *testing.T, c *harness.Cluster, name string) (*pushdown_pb.ParquetPushdownRequest, int64) {
	t.Helper()
	ctx := context.Background()
	ns, tn, _ := strings.Cut(name, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, []string{ns, tn})
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot().SnapshotID
	files, err := descriptor.ForSnapshot(ctx, tbl, snap)
	if err != nil {
		t.Fatalf("describe %s: %v", name, err)
	}
	return &pushdown_pb.ParquetPushdownRequest{Table: name, SnapshotId: &snap, DataFiles: files}, snap
}

// A catalog-validated endpoint plans client-resolved files that match the
// manifests (rows equal iceberg-go's at every snapshot) and refuses each
// kind of forged request with PERMISSION_DENIED naming the file and field.
func TestCatalogValidatedModeRefusesEachKindOfForgedRequest(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.trustMode=catalog-validated"}})
	tbl := positionDeleteTable(t, c, "trust_it", "mixed", 2, 2)
	ctx := context.Background()

	good, _ := clientResolved(t, c, "trust_it.mixed")
	resp, err := c.Catalog(t).Plan(ctx, good)
	if err != nil {
		t.Fatalf("an honest client-resolved plan was refused: %v", err)
	}
	if resp.GetStats().GetTrustMode() != pushdown_pb.TrustMode_CATALOG_VALIDATED {
		t.Fatalf("trust mode in stats: %s", resp.GetStats().GetTrustMode())
	}
	checkSnapshotsAgree(t, c, "trust_it.mixed", tbl, connector.Options{ClientResolved: true, Force: true, NoFallback: true})

	// Pick a data file with both kinds of deletes attached, and one other.
	var withDV, withPos, other int = -1, -1, -1
	for i, d := range good.DataFiles {
		for _, ref := range d.Deletes {
			if ref.FileFormat == pushdown_pb.FileFormat_FILE_FORMAT_PUFFIN {
				withDV = i
			} else if ref.Content == pushdown_pb.DeleteContent_POSITION_DELETES {
				withPos = i
			}
		}
		if len(d.Deletes) == 0 {
			other = i
		}
	}
	if withDV < 0 || withPos < 0 {
		t.Fatalf("the mixed table should have data files with deletion vectors (%d) and position-delete files (%d)", withDV, withPos)
	}
	if other < 0 {
		other = (withDV + 1) % len(good.DataFiles)
	}
	forge := func(f func(r *pushdown_pb.ParquetPushdownRequest)) *pushdown_pb.ParquetPushdownRequest {
		r := proto.Clone(good).(*pushdown_pb.ParquetPushdownRequest)
		f(r)
		return r
	}
	dvRef := func(r *pushdown_pb.ParquetPushdownRequest) *pushdown_pb.DeleteFileRef {
		for _, ref := range r.DataFiles[withDV].Deletes {
			if ref.FileFormat == pushdown_pb.FileFormat_FILE_FORMAT_PUFFIN {
				return ref
			}
		}
		return nil
	}
	cases := map[string]struct {
		req  *pushdown_pb.ParquetPushdownRequest
		want string
	}{
		"a data file not in the snapshot": {forge(func(r *pushdown_pb.ParquetPushdownRequest) {
			r.DataFiles[0].Path = strings.Replace(r.DataFiles[0].Path, ".parquet", "-forged.parquet", 1)
		}), "not a live data file"},
		"a wrong size":                 {forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles[0].SizeBytes++ }), "size_bytes"},
		"a wrong record count":         {forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles[0].RecordCount-- }), "record_count"},
		"a wrong data sequence number": {forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles[0].DataSequenceNumber += 5 }), "data_sequence_number"},
		"a wrong partition spec":       {forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles[0].PartitionSpecId = 7 }), "partition_spec_id"},
		"wrong partition values": {forge(func(r *pushdown_pb.ParquetPushdownRequest) {
			r.DataFiles[0].PartitionValues = []byte(strings.NewReplacer(`"a"`, `"x"`, `"b"`, `"x"`, `"c"`, `"x"`).Replace(string(r.DataFiles[0].PartitionValues)))
		}), "partition_values"},
		"an omitted delete file": {forge(func(r *pushdown_pb.ParquetPushdownRequest) {
			r.DataFiles[withPos].Deletes = r.DataFiles[withPos].Deletes[1:]
		}), "omits delete file"},
		"an added delete file": {forge(func(r *pushdown_pb.ParquetPushdownRequest) {
			r.DataFiles[other].Deletes = append(r.DataFiles[other].Deletes, proto.Clone(dvRef(r)).(*pushdown_pb.DeleteFileRef))
		}), "does not apply"},
		"a wrong deletion vector blob":   {forge(func(r *pushdown_pb.ParquetPushdownRequest) { dvRef(r).BlobLength += 4 }), "blob"},
		"a wrong delete sequence number": {forge(func(r *pushdown_pb.ParquetPushdownRequest) { dvRef(r).DataSequenceNumber-- }), "data_sequence_number"},
		"a wrong delete file size":       {forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles[withPos].Deletes[0].SizeBytes += 100 }), "size_bytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Catalog(t).Plan(ctx, tc.req)
			if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), tc.want) {
				t.Fatalf("forged request (%s): %v; want PERMISSION_DENIED mentioning %q", name, err, tc.want)
			}
		})
	}
	// Malformed (rather than forged) descriptors are INVALID_ARGUMENT.
	bad := forge(func(r *pushdown_pb.ParquetPushdownRequest) { r.DataFiles = append(r.DataFiles, r.DataFiles[0]) })
	if _, err := c.Catalog(t).Plan(ctx, bad); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a repeated data file: %v, want INVALID_ARGUMENT", err)
	}
}

// A connector-trusted endpoint without mTLS accepts client-resolved files
// only with a token signed with the cluster's [jwt.filer_signing] key.
func TestConnectorTrustedModeNeedsTheClusterMTLSOrASignedToken(t *testing.T) {
	// The shared cluster has neither TLS nor a signing key.
	shared := sharedCluster(t)
	sharedDeleteTables(t, shared)
	req, _ := clientResolved(t, shared, "del_it.v2pos")
	_, err := shared.Catalog(t).Plan(context.Background(), req)
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "mTLS") {
		t.Fatalf("client-resolved plan without mTLS or token: %v, want PERMISSION_DENIED explaining mTLS / token", err)
	}

	const key = "lakeweed-test-signing-key"
	c := harness.StartMini(t, harness.MiniOptions{Setup: func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "security.toml"), []byte("[jwt.filer_signing]\nkey = \""+key+"\"\nexpires_after_seconds = 60\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}})
	tbl := positionDeleteTable(t, c, "trust_it", "v3dv", 3, 0)
	good, _ := clientResolved(t, c, "trust_it.v3dv")
	plan := func(token string) error {
		ctx := context.Background()
		if token != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		}
		resp, err := c.Catalog(t).Plan(ctx, good)
		if err == nil && resp.GetStats().GetTrustMode() != pushdown_pb.TrustMode_CONNECTOR_TRUSTED {
			t.Fatalf("trust mode in stats: %s", resp.GetStats().GetTrustMode())
		}
		return err
	}
	sign := func(k string, prefixes []string) string {
		claims := security.SeaweedFilerClaims{AllowedPrefixes: prefixes}
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := plan(""); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("no token: %v, want PERMISSION_DENIED", err)
	}
	if err := plan(sign("another-key", nil)); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("token signed with another key: %v, want PERMISSION_DENIED", err)
	}
	if err := plan(sign(key, []string{"/buckets/other/"})); status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "allowed prefixes") {
		t.Fatalf("token for other prefixes: %v, want PERMISSION_DENIED naming the allowed prefixes", err)
	}
	if err := plan(sign(key, []string{"/buckets/" + c.Warehouse + "/trust_it/"})); err != nil {
		t.Fatalf("token covering the table: %v", err)
	}
	token := string(security.GenJwtForFilerServer(security.SigningKey(key), 60))
	checkSnapshotsAgree(t, c, "trust_it.v3dv", tbl, connector.Options{ClientResolved: true, Token: token, Force: true, NoFallback: true})
}
