package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

// secretIdentityJSON is what a pushdown port must never hand out: an S3
// identity file with its secret key, where the filer's IAM store keeps them.
const secretIdentityJSON = `{"name":"probe","credentials":[{"accessKey":"AKPROBE000000000","secretKey":"probe-secret-never-leaves"}]}`

// startIdentityCluster starts a cluster with S3 identities (admin, and
// alice who may read only warehouse/acl_it/open*), and puts an identity
// file into the filer's /etc/iam.
func startIdentityCluster(t *testing.T) *harness.Cluster {
	t.Helper()
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(accessIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: []string{"-s3.config=identities.json"},
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	})
	req, _ := http.NewRequest(http.MethodPut, "http://"+c.FilerAddr()+"/etc/iam/identities/probe.json", strings.NewReader(secretIdentityJSON))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("put the identity file into the filer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("put the identity file into the filer: %s", resp.Status)
	}
	return c
}

// filesOf returns the data file locations of the table's current snapshot.
func filesOf(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("plan files: %v (%d)", err, len(tasks))
	}
	var out []string
	for _, ft := range tasks {
		out = append(out, ft.File.FilePath())
	}
	return out
}

// serviceKey reads the cluster's service key out of the filer, as anyone
// who can read the filer directly can.
func serviceKey(t *testing.T, c *harness.Cluster) *access.Keys {
	t.Helper()
	var key []byte
	err := pb.WithGrpcFilerClient(false, 0, pb.ServerAddress(c.FilerGrpcAddress()), grpc.WithTransportCredentials(insecure.NewCredentials()),
		func(fc filer_pb.SeaweedFilerClient) error {
			resp, err := filer_pb.LookupEntry(context.Background(), fc, &filer_pb.LookupDirectoryEntryRequest{Directory: access.ServiceKeyDir, Name: access.ServiceKeyName})
			if err == nil {
				key = bytes.TrimSpace(resp.Entry.GetContent())
			}
			return err
		})
	if err != nil {
		t.Fatalf("read the service key: %v", err)
	}
	return access.NewKeys(key)
}

func bearer(t *testing.T, k *access.Keys, prefixes ...string) context.Context {
	t.Helper()
	tok, err := k.Token(prefixes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

func wantDenied(t *testing.T, what string, err error, want string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), want) {
		t.Fatalf("%s: %v; want PERMISSION_DENIED mentioning %q", what, err, want)
	}
}

// With S3 identities configured, the volume pushdown service serves a call
// only for a caller proven by the cluster's mTLS, a service token scoped
// to the files, or an S3 identity that may read every file named — and
// only files inside table buckets; the identity file in the filer's /etc
// is unreadable whoever asks.
func TestVolumePushdownServiceAuthorizesEveryCallAndReadsOnlyTableBuckets(t *testing.T) {
	c := startIdentityCluster(t)
	open := appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 300)
	closed := appendRows(t, createDeleteTable(t, c, "acl_it", "closed", 2), 0, 300)
	openFile, closedFile := filesOf(t, open)[0], filesOf(t, closed)[0]
	v := c.Volume(t)
	admin := c.Endpoints()
	alice := c.Endpoints()
	alice.AccessKey, alice.SecretKey = "AKALICE000000000", "alice-secret"
	read := func(path string) *pushdown_pb.ReadRangesRequest {
		return &pushdown_pb.ReadRangesRequest{Path: path, Ranges: []*pushdown_pb.FileRange{{Offset: 0, Length: 4}}}
	}
	signed := func(e lakeclient.Endpoints, method string, req proto.Message) context.Context {
		t.Helper()
		ctx, err := e.SignCall(context.Background(), c.VolumePushdownAddr(), method, req)
		if err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	readAs := func(ctx context.Context, req *pushdown_pb.ReadRangesRequest) ([]byte, error) {
		resp, err := v.ReadRanges(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.Data[0], nil
	}

	// Unauthenticated: every RPC refused, before it says anything.
	_, err := readAs(context.Background(), read(openFile))
	wantDenied(t, "an unsigned ReadRanges", err, "signature was not accepted")
	_, err = v.Status(context.Background(), &pushdown_pb.StatusRequest{})
	wantDenied(t, "an unsigned Status", err, "signature was not accepted")
	_, err = v.ComputeDeletes(context.Background(), &pushdown_pb.ComputeDeletesRequest{DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: openFile}}})
	wantDenied(t, "an unsigned ComputeDeletes", err, "signature was not accepted")

	// S3 identities: alice reads what the S3 gateway would let her read.
	b, err := readAs(signed(alice, "ReadRanges", read(openFile)), read(openFile))
	if err != nil || string(b) != "PAR1" {
		t.Fatalf("alice reads the open table's file: %q, %v", b, err)
	}
	_, err = readAs(signed(alice, "ReadRanges", read(closedFile)), read(closedFile))
	wantDenied(t, "alice reads the closed table's file", err, `identity "alice" may not read`)
	_, err = readAs(signed(alice, "ReadRanges", read(openFile)), read(closedFile))
	wantDenied(t, "a signature over another request", err, "payload hash does not match")
	if _, err := v.Status(signed(admin, "Status", &pushdown_pb.StatusRequest{}), &pushdown_pb.StatusRequest{}); err != nil {
		t.Fatalf("admin's signed Status: %v", err)
	}

	// Service tokens: scoped by their allowed prefixes; a forged one fails.
	keys := serviceKey(t, c)
	openDir := access.DirPrefixes([]string{openFile})
	if b, err := readAs(bearer(t, keys, openDir...), read(openFile)); err != nil || string(b) != "PAR1" {
		t.Fatalf("a token for the open file's folder reads it: %q, %v", b, err)
	}
	_, err = readAs(bearer(t, keys, openDir...), read(closedFile))
	wantDenied(t, "a token for another folder", err, "outside its allowed prefixes")
	_, err = readAs(bearer(t, access.NewKeys([]byte("not-the-cluster-key-not-the-cluster-key")), openDir...), read(openFile))
	wantDenied(t, "a token signed with another key", err, "bearer token refused")

	// Nothing outside table buckets, whoever asks: the identity file, a
	// plain bucket, traversal.
	for _, tc := range []struct {
		path string
		code codes.Code
		msg  string
	}{
		{"/etc/iam/identities/probe.json", codes.PermissionDenied, "is not an object in a bucket"},
		{"/buckets/" + c.Warehouse + "/../../etc/iam/identities/probe.json", codes.InvalidArgument, `".." path segment`},
		{"s3://" + c.Warehouse + "/acl_it/../../../etc/iam/identities/probe.json", codes.InvalidArgument, "want s3://bucket/key"},
		{"/buckets//etc/iam/identities/probe.json", codes.InvalidArgument, "empty path segment"},
		{"s3://iam-probe-plain-bucket/probe.json", codes.PermissionDenied, "not inside a table bucket"},
	} {
		for name, ctx := range map[string]context.Context{
			"admin":          signed(admin, "ReadRanges", read(tc.path)),
			"unscoped token": bearer(t, keys),
		} {
			b, err := readAs(ctx, read(tc.path))
			if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) || bytes.Contains(b, []byte("probe-secret")) {
				t.Fatalf("%s reads %s: %q, %v; want %s mentioning %q", name, tc.path, b, err, tc.code, tc.msg)
			}
		}
	}

	// ComputeDeletes writes only under the .index/ of a data file that
	// exists and matches the request.
	dataDir := openFile[:strings.LastIndexByte(openFile, '/')+1]
	for _, tc := range []struct {
		name string
		df   *pushdown_pb.DataFileDescriptor
		code codes.Code
		msg  string
	}{
		{"a data file that does not exist", &pushdown_pb.DataFileDescriptor{Path: dataDir + "no-such-file.parquet", SizeBytes: 100, RecordCount: 1}, codes.PermissionDenied, "does not exist"},
		{"a base name of ..", &pushdown_pb.DataFileDescriptor{Path: dataDir + "..", SizeBytes: 100, RecordCount: 1}, codes.InvalidArgument, "want s3://bucket/key"},
		{"a data file of another size", &pushdown_pb.DataFileDescriptor{Path: openFile, SizeBytes: 7, RecordCount: 1}, codes.FailedPrecondition, "the table metadata says 7"},
		{"a plain bucket", &pushdown_pb.DataFileDescriptor{Path: "s3://iam-probe-plain-bucket/x.parquet", SizeBytes: 100, RecordCount: 1}, codes.PermissionDenied, "not inside a table bucket"},
	} {
		req := &pushdown_pb.ComputeDeletesRequest{DataFiles: []*pushdown_pb.DataFileDescriptor{tc.df}}
		_, err := v.ComputeDeletes(signed(admin, "ComputeDeletes", req), req)
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Fatalf("ComputeDeletes of %s: %v; want %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}
	req := &pushdown_pb.ComputeDeletesRequest{DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: closedFile, SizeBytes: 100, RecordCount: 1}}}
	_, err = v.ComputeDeletes(signed(alice, "ComputeDeletes", req), req)
	wantDenied(t, "alice computes deletes of the closed table", err, `identity "alice" may not read`)

	// ReadRows: the same doors, then bounds and the file's identity
	// before a row is decoded; an allowed call gets exactly its rows.
	openDF, closedDF := dataFileOf(t, open), dataFileOf(t, closed)
	rows := func(df iceberg.DataFile, records int64, positions ...uint64) *pushdown_pb.ReadRowsRequest {
		b, err := roaring64.BitmapOf(positions...).ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		return &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: []int32{1, 3}, Files: []*pushdown_pb.ReadRowsFile{{
			Path: df.FilePath(), SizeBytes: df.FileSizeBytes(), RecordCount: records, Positions: b}}}
	}
	last := uint64(openDF.Count() - 1)
	ok := rows(openDF, openDF.Count(), 0, last)
	_, err = v.ReadRows(context.Background(), ok)
	wantDenied(t, "an unsigned ReadRows", err, "signature was not accepted")
	cl := rows(closedDF, closedDF.Count(), 0)
	_, err = v.ReadRows(signed(alice, "ReadRows", cl), cl)
	wantDenied(t, "alice reads rows of the closed table", err, `identity "alice" may not read`)
	resp, err := v.ReadRows(signed(alice, "ReadRows", ok), ok)
	if err != nil || len(resp.GetFiles()) != 1 || resp.Files[0].GetRows() != 2 {
		t.Fatalf("alice reads two rows of the open table's file: %v, %v", resp, err)
	}
	rd, err := ipc.NewReader(bytes.NewReader(resp.Files[0].GetColumnsIpc()))
	if err != nil || !rd.Next() || rd.RecordBatch().NumRows() != 2 || rd.RecordBatch().NumCols() != 2 ||
		rd.RecordBatch().Schema().Field(0).Name != "id" || rd.RecordBatch().Schema().Field(1).Name != "val" {
		t.Fatalf("ReadRows' Arrow IPC: want 2 rows of id, val: %v", err)
	}
	rd.Release()
	changed := rows(openDF, openDF.Count(), 0)
	changed.Files[0].Identity = "size-1-rows-1-not-this-one"
	for _, tc := range []struct {
		name string
		req  *pushdown_pb.ReadRowsRequest
		code codes.Code
		msg  string
	}{
		{"a position past the file's rows", rows(openDF, openDF.Count(), last+1), codes.InvalidArgument, "past the file's"},
		{"a record count the file does not have", rows(openDF, openDF.Count()+1, 0), codes.FailedPrecondition, "the file changed"},
		{"an identity the file does not have", changed, codes.FailedPrecondition, "the file changed"},
		{"no projected fields", &pushdown_pb.ReadRowsRequest{Files: ok.Files}, codes.InvalidArgument, "no projected field ids"},
		{"positions that are not a bitmap", &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: []int32{1}, Files: []*pushdown_pb.ReadRowsFile{{
			Path: openDF.FilePath(), SizeBytes: openDF.FileSizeBytes(), RecordCount: openDF.Count(), Positions: []byte("not roaring")}}}, codes.InvalidArgument, "not a portable roaring64 bitmap"},
		{"too many fields", &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: make([]int32, 1025), Files: ok.Files}, codes.ResourceExhausted, "projected fields exceed"},
	} {
		_, err := v.ReadRows(signed(admin, "ReadRows", tc.req), tc.req)
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Fatalf("ReadRows with %s: %v; want %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}

	// ScanRows: the same doors; an allowed call streams exactly the rows
	// its predicate keeps (every row of the file's one row group here,
	// or the LIMIT's first).
	schemaJSON, err := json.Marshal(open.Schema())
	if err != nil {
		t.Fatal(err)
	}
	scan := func(df iceberg.DataFile, limit int64) *pushdown_pb.ScanRowsRequest {
		return &pushdown_pb.ScanRowsRequest{Path: df.FilePath(), SizeBytes: df.FileSizeBytes(), RecordCount: df.Count(), Limit: limit,
			RowGroups: []*pushdown_pb.ScanRowGroup{{RowGroup: 0}}, SchemaJson: schemaJSON, ProjectedFieldIds: []int32{1, 3},
			PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: []byte(`{"type":"not-null","term":{"field-id":1}}`)}
	}
	scanned := func(ctx context.Context, req *pushdown_pb.ScanRowsRequest) (int64, error) {
		stream, err := v.ScanRows(ctx, req)
		if err != nil {
			return 0, err
		}
		var n int64
		for {
			msg, err := stream.Recv()
			if err == io.EOF {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			n += msg.GetRowCount()
		}
	}
	_, err = scanned(context.Background(), scan(openDF, 0))
	wantDenied(t, "an unsigned ScanRows", err, "signature was not accepted")
	_, err = scanned(signed(alice, "ScanRows", scan(closedDF, 0)), scan(closedDF, 0))
	wantDenied(t, "alice scans the closed table", err, `identity "alice" may not read`)
	if n, err := scanned(signed(alice, "ScanRows", scan(openDF, 0)), scan(openDF, 0)); err != nil || n != openDF.Count() {
		t.Fatalf("alice scans the open table's file: %d rows, %v; want its %d", n, err, openDF.Count())
	}
	if n, err := scanned(signed(alice, "ScanRows", scan(openDF, 2)), scan(openDF, 2)); err != nil || n != 2 {
		t.Fatalf("alice scans the open table's file with a LIMIT of 2: %d rows, %v", n, err)
	}
	stale := scan(openDF, 0)
	stale.Identity = "1-2-0123456789abcdef0123456789abcdef"
	_, err = scanned(signed(admin, "ScanRows", stale), stale)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "the file changed") {
		t.Fatalf("ScanRows naming another identity: %v; want FAILED_PRECONDITION saying the file changed", err)
	}
}

// dataFileOf is the first data file of tbl's current snapshot.
func dataFileOf(t *testing.T, tbl *table.Table) iceberg.DataFile {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("plan files: %v (%d)", err, len(tasks))
	}
	return tasks[0].File
}

// Catalog → volume calls inside one cluster keep working with identities
// configured and no extra setup: the deletes of an admin's plan are computed
// beside the data (nothing reported degraded), and rows are right.
func TestCatalogComputesDeletesOnTheVolumeServiceWhenIdentitiesAreConfigured(t *testing.T) {
	c := startIdentityCluster(t)
	tbl := appendRows(t, createDeleteTable(t, c, "acl_it", "open", 2), 0, 600)
	tbl = deleteWhere(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(100)))
	req := &pushdown_pb.ParquetPushdownRequest{Table: "acl_it.open"}
	ctx, err := c.Endpoints().SignPlan(context.Background(), c.CatalogAddr(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Catalog(t).Plan(ctx, req)
	if err != nil {
		t.Fatalf("admin plans a table with deletes: %v", err)
	}
	st := resp.GetStats()
	if st.GetRowsDeleted() != 100 || st.GetDeleteFilesApplied() == 0 {
		t.Fatalf("rows deleted %d, delete files applied %d; want 100 and some", st.GetRowsDeleted(), st.GetDeleteFilesApplied())
	}
	for _, m := range st.GetIndexesMissing() {
		if strings.Contains(m, "deletes") {
			t.Fatalf("deletes were not computed beside the data: %q", m)
		}
	}
	_ = tbl
}
