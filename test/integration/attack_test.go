package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/golang-jwt/jwt/v5"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

// The outside security test of issue 31, finding by finding, on a cluster
// with a signing key and S3 identities: admin; alice may read and list the
// warehouse; bob may also write it; a second table bucket, vault.
const attackIdentities = `{
  "identities": [
    {"name": "admin", "credentials": [{"accessKey": "AKADMIN000000000", "secretKey": "admin-secret"}],
     "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
    {"name": "alice", "credentials": [{"accessKey": "AKALICE000000000", "secretKey": "alice-secret"}],
     "actions": ["Read:warehouse", "List:warehouse"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB00000000000", "secretKey": "bob-secret"}],
     "actions": ["Read:warehouse", "Write:warehouse", "List:warehouse"]}
  ]
}`

const attackSigningKey = "lakeweed-attack-test-signing-key-0123456789"

type attackCluster struct {
	*harness.Cluster
	admin, alice, bob lakeclient.Endpoints
	events            *table.Table // warehouse demo.events: 4 files of 50,000 rows
	vault             *table.Table // vault vault_ns.secret
}

func startAttackCluster(t *testing.T, extra ...string) *attackCluster {
	t.Helper()
	c := harness.StartMini(t, harness.MiniOptions{
		Setup: func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "identities.json"), []byte(attackIdentities), 0o600); err != nil {
				t.Fatal(err)
			}
			toml := "[jwt.filer_signing]\nkey = \"" + attackSigningKey + "\"\nexpires_after_seconds = 60\n"
			if err := os.WriteFile(filepath.Join(dir, "security.toml"), []byte(toml), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		ExtraArgs: append([]string{"-s3.config=identities.json"}, extra...),
		AccessKey: "AKADMIN000000000", SecretKey: "admin-secret",
	})
	a := &attackCluster{Cluster: c, admin: c.Endpoints(), alice: c.Endpoints(), bob: c.Endpoints()}
	a.alice.AccessKey, a.alice.SecretKey = "AKALICE000000000", "alice-secret"
	a.bob.AccessKey, a.bob.SecretKey = "AKBOB00000000000", "bob-secret"
	env := []string{"AWS_ACCESS_KEY_ID=AKADMIN000000000", "AWS_SECRET_ACCESS_KEY=admin-secret"}
	for _, args := range [][]string{
		{"-table", "demo.events", "-rows", "200000", "-files", "4", "-indexed", "none", "-warehouse", c.Warehouse},
		{"-table", "vault_ns.secret", "-rows", "2000", "-files", "2", "-indexed", "none", "-warehouse", "vault"},
	} {
		if out, errOut, err := harness.WeedEnv(t, c.Dir, env, append([]string{"pushdown", "demo", "-catalog", c.CatalogAddr()}, args...)...); err != nil {
			t.Fatalf("load %v: %v\n%s%s", args, err, out, errOut)
		}
	}
	// a btree on id, as the attacked cluster had: a NOT IN is answered by it
	if out, errOut, err := harness.WeedEnv(t, c.Dir, env, "pushdown", "index", "create", "-catalog", c.CatalogAddr(), "-table", "demo.events", "-column", "id", "-kind", "btree", "-wait"); err != nil {
		t.Fatalf("index create: %v\n%s%s", err, out, errOut)
	}
	ctx := context.Background()
	var err error
	if a.events, err = c.Iceberg(t).LoadTable(ctx, catalog.ToIdentifier("demo", "events")); err != nil {
		t.Fatal(err)
	}
	vaultEnd := c.Endpoints()
	vaultEnd.Warehouse = "vault"
	vcat, err := lakeclient.NewIcebergCatalog(ctx, vaultEnd)
	if err != nil {
		t.Fatal(err)
	}
	if a.vault, err = vcat.LoadTable(ctx, catalog.ToIdentifier("vault_ns", "secret")); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *attackCluster) signed(t *testing.T, e lakeclient.Endpoints, addr, method string, req proto.Message) context.Context {
	t.Helper()
	ctx, err := e.SignCall(context.Background(), addr, method, req)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// alive fails the test when the process died or stopped answering.
func (a *attackCluster) alive(t *testing.T, after string) {
	t.Helper()
	if !a.Proc.Running() {
		t.Fatalf("the process died after %s\n%s", after, harness.Tail(a.Proc.Log, 40))
	}
	req := &pushdown_pb.StatusRequest{}
	if _, err := a.Volume(t).Status(a.signed(t, a.admin, a.VolumePushdownAddr(), "Status", req), req); err != nil {
		t.Fatalf("the volume service does not answer after %s: %v", after, err)
	}
}

func wantCode(t *testing.T, what string, err error, code codes.Code, mentions ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("%s: %v; want %s", what, err, code)
	}
	for _, m := range mentions {
		if !strings.Contains(status.Convert(err).Message(), m) {
			t.Fatalf("%s: %q does not mention %q", what, status.Convert(err).Message(), m)
		}
	}
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds(t *testing.T, c *harness.Cluster) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Proc.Cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks of 1/100 s
}

// persistedDeletes lists the delete bitmaps persisted under a data file's
// .index/ folder (every identity).
func persistedDeletes(t *testing.T, c *harness.Cluster, dataFile string) []string {
	t.Helper()
	fp, err := fileread.FilerPath(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	dir, name := fp[:strings.LastIndexByte(fp, '/')], fp[strings.LastIndexByte(fp, '/')+1:]
	var out []string
	err = pb.WithGrpcFilerClient(false, 0, pb.ServerAddress(c.FilerGrpcAddress()), grpc.WithTransportCredentials(insecure.NewCredentials()),
		func(fc filer_pb.SeaweedFilerClient) error {
			var identities []string
			err := filer_pb.SeaweedList(context.Background(), fc, dir+"/.index/"+name, "", func(e *filer_pb.Entry, _ bool) error {
				if e.IsDirectory {
					identities = append(identities, e.Name)
				}
				return nil
			}, "", false, 1000)
			if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
				return err
			}
			for _, id := range identities {
				if err := filer_pb.SeaweedList(context.Background(), fc, dir+"/.index/"+name+"/"+id, "deletes.", func(e *filer_pb.Entry, _ bool) error {
					out = append(out, id+"/"+e.Name)
					return nil
				}, "", false, 1000); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatalf("list the .index/ of %s: %v", dataFile, err)
	}
	return out
}

func TestOneRequestCannotCrashExhaustOrMisleadAPushdownServer(t *testing.T) {
	a := startAttackCluster(t, "-pushdown.volume.maxAnswerMB=16")
	ctx := context.Background()
	files := filesOf(t, a.events)
	v := a.Volume(t)

	// 1. Ranges whose offset + length overflow: OUT_OF_RANGE on an inline
	// file (the table's metadata.json) and on a chunked data file; the
	// process lives on.
	t.Run("ARangeThatOverflowsIsOutOfRangeOnEveryStorageForm", func(t *testing.T) {
		for _, path := range []string{a.events.MetadataLocation(), files[0]} {
			read := func(rg *pushdown_pb.FileRange) (*pushdown_pb.ReadRangesResponse, error) {
				req := &pushdown_pb.ReadRangesRequest{Path: path, Ranges: []*pushdown_pb.FileRange{rg}}
				return v.ReadRanges(a.signed(t, a.alice, a.VolumePushdownAddr(), "ReadRanges", req), req)
			}
			head, err := read(&pushdown_pb.FileRange{Offset: 0, Length: 1})
			if err != nil {
				t.Fatalf("alice reads the first byte of %s: %v", filepath.Base(path), err)
			}
			size := head.GetFileSize()
			for _, rg := range []*pushdown_pb.FileRange{{Offset: math.MaxInt64, Length: 1}, {Offset: math.MaxInt64 - 3, Length: 8}, {Offset: size - 2, Length: 8}, {Offset: size + 1, Length: 0}} {
				_, err := read(rg)
				wantCode(t, fmt.Sprintf("alice reads [%d, +%d) of %s (%d bytes)", rg.Offset, rg.Length, filepath.Base(path), size), err, codes.OutOfRange, "outside the file")
			}
			// a length past the call's limit is refused before anything is read
			_, err = read(&pushdown_pb.FileRange{Offset: 1, Length: math.MaxInt64})
			wantCode(t, "alice reads MaxInt64 bytes", err, codes.ResourceExhausted)
		}
		a.alive(t, "overflowing ranges")
	})

	// 4a. A read-only caller cannot make ReadRows build a giant answer: a
	// file named twice is refused, and an answer over the limit is refused
	// from its estimate before anything is decoded, four at once.
	t.Run("ReadRowsIsRefusedBeforeItsAnswerFillsMemory", func(t *testing.T) {
		sizes := map[string]int64{}
		rows := map[string]int64{}
		tasks, err := a.events.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ft := range tasks {
			sizes[ft.File.FilePath()], rows[ft.File.FilePath()] = ft.File.FileSizeBytes(), ft.File.Count()
		}
		positions := roaring64.New()
		positions.AddRange(0, 50000)
		var buf bytes.Buffer
		if _, err := positions.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		file := func(p string) *pushdown_pb.ReadRowsFile {
			return &pushdown_pb.ReadRowsFile{Path: p, SizeBytes: sizes[p], RecordCount: rows[p], Positions: buf.Bytes()}
		}
		all := []int32{1, 2, 3, 4, 5, 6, 7, 8}
		repeated := &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: all}
		for range 64 {
			repeated.Files = append(repeated.Files, file(files[0]))
		}
		before := a.ProcessRSSKiB()
		_, err = v.ReadRows(a.signed(t, a.alice, a.VolumePushdownAddr(), "ReadRows", repeated), repeated)
		wantCode(t, "alice names one file 64 times", err, codes.InvalidArgument, "repeats files[0]")
		distinct := &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: all}
		for _, p := range files {
			distinct.Files = append(distinct.Files, file(p))
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = v.ReadRows(a.signed(t, a.alice, a.VolumePushdownAddr(), "ReadRows", distinct), distinct)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			wantCode(t, fmt.Sprintf("ReadRows %d of 200,000 rows of every column", i), err, codes.ResourceExhausted, "-pushdown.volume.maxAnswerMB", "estimated")
		}
		grew := (a.ProcessRSSKiB() - before) >> 10
		t.Logf("RSS %d MiB before, grew %d MiB", before>>10, grew)
		if grew > 256 {
			t.Fatalf("refused ReadRows calls grew the process by %d MiB, want ≤ 256", grew)
		}
		a.alive(t, "ReadRows refusals")
	})

	// 4b. Unsigned requests with 15 MB bodies are refused from their
	// metadata, before the body is read: 100 at once cost no memory.
	t.Run("UnsignedBodiesAreRefusedBeforeTheyAreRead", func(t *testing.T) {
		big := &pushdown_pb.ParquetPushdownRequest{Table: "demo.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT,
			Predicate: bytes.Repeat([]byte{0x5a}, 15<<20)}
		before := a.ProcessRSSKiB()
		var wg sync.WaitGroup
		errs := make([]error, 100)
		cat := a.Catalog(t)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = cat.Plan(ctx, big)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			wantCode(t, fmt.Sprintf("unsigned Plan %d", i), err, codes.PermissionDenied, "signature was not accepted")
		}
		time.Sleep(500 * time.Millisecond)
		grew := (a.ProcessRSSKiB() - before) >> 10
		t.Logf("RSS %d MiB before, grew %d MiB", before>>10, grew)
		if grew > 256 {
			t.Fatalf("100 refused unsigned 15 MB Plans grew the process by %d MiB, want ≤ 256", grew)
		}
		a.alive(t, "unsigned 15 MB Plans")
	})

	// 5. A NOT IN of 100,000 ids answers within its deadline, and a
	// cancelled heavy call stops burning CPU.
	t.Run("AHundredThousandIdNotInAnswersInTimeAndStopsWhenCancelled", func(t *testing.T) {
		ids := make([]string, 100000)
		for i := range ids {
			ids[i] = strconv.Itoa(i * 7)
		}
		pred := []byte(`{"type":"not-in","term":{"field-id":1},"values":[` + strings.Join(ids, ",") + `]}`)
		req := &pushdown_pb.ParquetPushdownRequest{Table: "demo.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: pred}
		cctx, cancel := context.WithTimeout(a.signed(t, a.alice, a.CatalogAddr(), "Plan", req), 60*time.Second)
		defer cancel()
		t0 := time.Now()
		resp, err := a.Catalog(t).Plan(cctx, req)
		if err != nil {
			t.Fatalf("NOT IN of 100,000 ids: %v after %v", err, time.Since(t0))
		}
		t.Logf("NOT IN of 100,000 ids (%d KB) planned %d files in %v; indexes used %v", len(pred)>>10, len(resp.GetFiles()), time.Since(t0), resp.GetStats().GetIndexesUsed())
		if len(resp.GetStats().GetIndexesUsed()) == 0 {
			t.Fatalf("the btree on id did not answer the NOT IN: missing %v", resp.GetStats().GetIndexesMissing())
		}
		in := []byte(`{"type":"in","term":{"field-id":1},"values":[` + strings.Join(ids, ",") + `]}`)
		heavy := &pushdown_pb.ParquetPushdownRequest{Table: "demo.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: in}
		for i := 0; i < 5; i++ {
			cctx, cancel := context.WithTimeout(a.signed(t, a.alice, a.CatalogAddr(), "Plan", heavy), 30*time.Millisecond)
			_, err := a.Catalog(t).Plan(cctx, heavy)
			cancel()
			if err != nil && status.Code(err) != codes.DeadlineExceeded && status.Code(err) != codes.Canceled {
				t.Fatalf("a cancelled IN of 100,000 ids: %v", err)
			}
		}
		time.Sleep(time.Second)
		c0 := cpuSeconds(t, a.Cluster)
		time.Sleep(3 * time.Second)
		if used := cpuSeconds(t, a.Cluster) - c0; used > 1.5 {
			t.Fatalf("the process burnt %.2f CPU-seconds in the 3 s after its callers cancelled", used)
		}
	})

	// 6. A read-only caller may not build (write) payloads on the volume;
	// a caller with Write may.
	var payload string
	t.Run("ReadOnlyCallersCannotWritePayloadsOnTheVolume", func(t *testing.T) {
		tasks, err := a.events.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		schema, _ := json.Marshal(a.events.Schema())
		req := &pushdown_pb.BuildIndexesRequest{SchemaJson: schema, Indexes: []*pushdown_pb.IndexSpec{{FieldId: 1, Kind: "btree", Params: map[string]string{"rows_per_group": "16"}}},
			DataFiles: []*pushdown_pb.DataFileDescriptor{{Path: tasks[0].File.FilePath(), SizeBytes: tasks[0].File.FileSizeBytes(), RecordCount: tasks[0].File.Count()}}}
		_, err = v.BuildIndexes(a.signed(t, a.alice, a.VolumePushdownAddr(), "BuildIndexes", req), req)
		wantCode(t, "alice builds an index", err, codes.PermissionDenied, `identity "alice" may not write`)
		resp, err := v.BuildIndexes(a.signed(t, a.bob, a.VolumePushdownAddr(), "BuildIndexes", req), req)
		if err != nil || len(resp.GetBuilt()) != 1 || resp.GetBuilt()[0].GetError() != "" {
			t.Fatalf("bob, who may write the warehouse, builds an index: %v %v", resp, err)
		}
		payload = resp.GetBuilt()[0].GetPayloadPath()
	})

	// 6b. A read-only caller gets deleted positions computed but persists
	// nothing beside the data; a caller with Write persists them.
	t.Run("ReadOnlyCallersGetDeletesComputedButPersistNothing", func(t *testing.T) {
		tbl := positionDeleteTable(t, a.Cluster, "del_atk", "pos", 2, 0)
		descs, err := descriptor.ForSnapshot(ctx, tbl, tbl.CurrentSnapshot().SnapshotID)
		if err != nil {
			t.Fatal(err)
		}
		var withDeletes []*pushdown_pb.DataFileDescriptor
		for _, d := range descs {
			if len(d.GetDeletes()) > 0 {
				withDeletes = append(withDeletes, d)
			}
		}
		if len(withDeletes) < 2 {
			t.Fatalf("%d data files with deletes, want 2", len(withDeletes))
		}
		compute := func(e lakeclient.Endpoints, d *pushdown_pb.DataFileDescriptor) int64 {
			t.Helper()
			req := &pushdown_pb.ComputeDeletesRequest{DataFiles: []*pushdown_pb.DataFileDescriptor{d}}
			resp, err := v.ComputeDeletes(a.signed(t, e, a.VolumePushdownAddr(), "ComputeDeletes", req), req)
			if err != nil || len(resp.GetFiles()) != 1 || resp.GetFiles()[0].GetCardinality() == 0 {
				t.Fatalf("ComputeDeletes of %s: %v %v", d.GetPath(), resp, err)
			}
			return resp.GetFiles()[0].GetCardinality()
		}
		compute(a.alice, withDeletes[0])
		if got := persistedDeletes(t, a.Cluster, withDeletes[0].GetPath()); len(got) != 0 {
			t.Fatalf("alice, who may only read, persisted %v", got)
		}
		compute(a.bob, withDeletes[1])
		if got := persistedDeletes(t, a.Cluster, withDeletes[1].GetPath()); len(got) == 0 {
			t.Fatalf("bob, who may write, persisted nothing for %s", withDeletes[1].GetPath())
		}
	})

	// 7. A token scoped to the warehouse learns nothing of the vault: the
	// same answer for an existing and a missing table, whatever is asked.
	t.Run("AScopedTokenLearnsNothingOutsideItsPrefixes", func(t *testing.T) {
		claims := security.SeaweedFilerClaims{AllowedPrefixes: []string{"/buckets/" + a.Warehouse + "/"},
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))}}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(attackSigningKey))
		if err != nil {
			t.Fatal(err)
		}
		tctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		cat := a.Catalog(t)
		answer := func(table string) map[string]string {
			out := map[string]string{}
			norm := func(err error) string {
				return status.Code(err).String() + ": " + strings.ReplaceAll(status.Convert(err).Message(), table, "T")
			}
			_, err := cat.Plan(tctx, &pushdown_pb.ParquetPushdownRequest{Warehouse: "vault", Table: "vault_ns." + table})
			out["Plan"] = norm(err)
			_, err = cat.Plan(tctx, &pushdown_pb.ParquetPushdownRequest{Warehouse: "vault", Table: "vault_ns." + table,
				PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG, Predicate: []byte(`{"type":"eq","term":{"field-id":2},"value":"x"}`)})
			out["Plan with a predicate"] = norm(err)
			_, err = cat.ListIndexes(tctx, &pushdown_pb.ListIndexesRequest{Warehouse: "vault", Table: "vault_ns." + table})
			out["ListIndexes"] = norm(err)
			_, err = cat.BuildIndexes(tctx, &pushdown_pb.BuildTableIndexesRequest{Warehouse: "vault", Table: "vault_ns." + table})
			out["BuildIndexes"] = norm(err)
			return out
		}
		existing, missing := answer("secret"), answer("nosuchtable")
		for call, got := range existing {
			if got != missing[call] {
				t.Errorf("%s tells an existing vault table from a missing one:\n  existing: %s\n  missing:  %s", call, got, missing[call])
			}
			if !strings.HasPrefix(got, "PermissionDenied") || strings.Contains(got, "/buckets/vault") || strings.Contains(got, a.vault.Metadata().TableUUID().String()) {
				t.Errorf("%s: %s; want PERMISSION_DENIED naming no vault path", call, got)
			}
		}
		vfile := filesOf(t, a.vault)[0]
		read := func(path string) string {
			_, err := v.ReadRanges(tctx, &pushdown_pb.ReadRangesRequest{Path: path, Ranges: []*pushdown_pb.FileRange{{Offset: 0, Length: 4}}})
			return status.Code(err).String() + ": " + status.Convert(err).Message()
		}
		if e, m := read(vfile), read(strings.TrimSuffix(vfile, ".parquet")+"-missing.parquet"); e != m || strings.Contains(e, "vault") {
			t.Errorf("ReadRanges tells an existing vault file from a missing one, or names it:\n  existing: %s\n  missing:  %s", e, m)
		}
	})

	// 8. Messages quote at most 64 bytes of a client's path; side-index
	// payloads are not served by ReadRanges, as the S3 gateway serves none.
	t.Run("MessagesQuoteLittleAndPayloadsAreNotServed", func(t *testing.T) {
		long := strings.TrimSuffix(files[0], ".parquet") + strings.Repeat("/"+strings.Repeat("x", 540), 7) + ".parquet"
		req := &pushdown_pb.ReadRangesRequest{Path: long, Ranges: []*pushdown_pb.FileRange{{Offset: 0, Length: 4}}}
		_, err := v.ReadRanges(a.signed(t, a.alice, a.VolumePushdownAddr(), "ReadRanges", req), req)
		wantCode(t, "a 3,9xx-byte path that does not exist", err, codes.NotFound)
		if n := len(status.Convert(err).Message()); n > 400 {
			t.Fatalf("the NOT_FOUND message is %d bytes: %.200s…", n, status.Convert(err).Message())
		}
		if payload == "" {
			t.Skip("no payload was built (see ReadOnlyCallersCannotWritePayloadsOnTheVolume)")
		}
		req = &pushdown_pb.ReadRangesRequest{Path: payload, Ranges: []*pushdown_pb.FileRange{{Offset: 0, Length: 4}}}
		_, err = v.ReadRanges(a.signed(t, a.admin, a.VolumePushdownAddr(), "ReadRanges", req), req)
		wantCode(t, "admin reads a side-index payload", err, codes.PermissionDenied, "side-index folder")
	})
	a.alive(t, "every attack")
}
