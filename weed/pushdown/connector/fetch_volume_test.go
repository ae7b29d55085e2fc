package connector

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

const testFileSize = 20 << 20

// testFile is the one file both fakes serve.
var testFile = func() []byte {
	b := make([]byte, testFileSize)
	for i := range b {
		b[i] = byte(i*31 + i>>11)
	}
	return b
}()

// fakeS3 serves ranged GETs of testFile at /b/t/f.parquet to the access
// key AKGOOD only (403 AccessDenied otherwise), counting them.
type fakeS3 struct {
	mu    sync.Mutex
	gets  int
	bytes int64
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Authorization"), "Credential=AKGOOD/") {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	var a, b int64
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &a, &b); err != nil || r.URL.Path != "/b/t/f.parquet" || b >= testFileSize {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.gets++
	f.bytes += b - a + 1
	f.mu.Unlock()
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, testFileSize))
	w.Header().Set("Content-Length", fmt.Sprint(b-a+1))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(testFile[a : b+1])
}

// fakeVolume answers ReadRanges from testFile, or refuses every call with
// refuse, recording each call's ranges and bytes.
type fakeVolume struct {
	pushdown_pb.UnimplementedPushdownVolumeServer
	refuse error
	mu     sync.Mutex
	calls  [][2]int64 // ranges, bytes
}

func (v *fakeVolume) ReadRanges(ctx context.Context, req *pushdown_pb.ReadRangesRequest) (*pushdown_pb.ReadRangesResponse, error) {
	if v.refuse != nil {
		return nil, v.refuse
	}
	resp := &pushdown_pb.ReadRangesResponse{FileSize: testFileSize}
	var n int64
	for _, r := range req.GetRanges() {
		resp.Data = append(resp.Data, testFile[r.Offset:r.Offset+r.Length])
		n += r.Length
	}
	resp.BytesLocal = n
	v.mu.Lock()
	v.calls = append(v.calls, [2]int64{int64(len(req.GetRanges())), n})
	v.mu.Unlock()
	return resp, nil
}

// testFetcher is a fetcher without a range cache reading through fake S3
// as accessKey and from the volume service at "volume" (v over bufconn;
// any other address is dialled for real).
func testFetcher(t *testing.T, path ReadPath, accessKey string, v pushdown_pb.PushdownVolumeServer) (*fetcher, *fakeS3) {
	t.Helper()
	fs := &fakeS3{}
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, "secret", "")})
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	pushdown_pb.RegisterPushdownVolumeServer(gs, v)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn := func(addr string) (grpc.ClientConnInterface, error) {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}
		if addr == "volume" {
			opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
			addr = "passthrough:///volume"
		}
		c, err := grpc.NewClient(addr, opts...)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	sign := func(ctx context.Context, addr, method string, req proto.Message) (context.Context, error) {
		return ctx, nil
	}
	return &fetcher{client: client, concurrency: 4, path: path, volume: &volumeReader{conn: conn, sign: sign}}, fs
}

func testPlanned(endpoint string) *pushdown_pb.PlannedFile {
	return &pushdown_pb.PlannedFile{File: "s3://b/t/f.parquet", SizeBytes: testFileSize, Identity: "x", ReadEndpoint: endpoint}
}

// testRanges are small ranges and one of 10 MiB, larger than a batch.
var testRanges = []byteRange{{Off: 0, Len: 4}, {Off: 100, Len: 5000}, {Off: 1 << 20, Len: 10 << 20}, {Off: 15 << 20, Len: 3 << 20}, {Off: testFileSize - 8, Len: 8}}

func wantTestBytes(t *testing.T, sf *sparseFile) {
	t.Helper()
	for _, r := range testRanges {
		b := make([]byte, r.Len)
		if _, err := sf.ReadAt(b, r.Off); err != nil || !bytes.Equal(b, testFile[r.Off:r.Off+r.Len]) {
			t.Fatalf("range [%d, %d): err %v, bytes equal %v", r.Off, r.Off+r.Len, err, bytes.Equal(b, testFile[r.Off:r.Off+r.Len]))
		}
	}
}

func testTotal() (n int64) {
	for _, r := range testRanges {
		n += r.Len
	}
	return n
}

// A file whose plan names its volume pushdown service is read there, in
// calls of at most volumeBatchBytes, and not through the S3 gateway.
func TestPlannedRangesAreReadFromTheNamedVolumeServiceInBoundedCalls(t *testing.T) {
	for _, path := range []ReadPath{ReadAuto, ReadVolume} {
		v := &fakeVolume{}
		ft, fs := testFetcher(t, path, "AKGOOD", v)
		sf, err := ft.fetch(context.Background(), testPlanned("volume"), testRanges, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		wantTestBytes(t, sf)
		var sum int64
		for _, c := range v.calls {
			if c[1] > volumeBatchBytes || c[0] > volumeBatchRanges {
				t.Fatalf("%s: a call of %d ranges, %d bytes exceeds the bounds", path, c[0], c[1])
			}
			sum += c[1]
		}
		if sum != testTotal() || ft.vol.bytes.Load() != testTotal() || ft.vol.local.Load() != testTotal() || fs.gets != 0 || ft.vol.fallbacks.Load() != 0 {
			t.Fatalf("%s: volume served %d of %d bytes in %d calls (counted %d), S3 %d GETs, %d fallbacks", path, sum, testTotal(), len(v.calls), ft.vol.bytes.Load(), fs.gets, ft.vol.fallbacks.Load())
		}
	}
}

// -read s3, or a file the plan names no volume service for, reads through
// the S3 gateway; -read volume refuses the latter.
func TestFilesWithoutAVolumeServiceOrUnderReadS3AreReadThroughTheGateway(t *testing.T) {
	for _, tc := range []struct {
		path     ReadPath
		endpoint string
	}{{ReadS3, "volume"}, {ReadAuto, ""}} {
		v := &fakeVolume{}
		ft, fs := testFetcher(t, tc.path, "AKGOOD", v)
		sf, err := ft.fetch(context.Background(), testPlanned(tc.endpoint), testRanges, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantTestBytes(t, sf)
		if len(v.calls) != 0 || fs.bytes != testTotal() || ft.vol.fallbacks.Load() != 0 {
			t.Fatalf("%s, endpoint %q: %d volume calls, %d S3 bytes of %d, %d fallbacks", tc.path, tc.endpoint, len(v.calls), fs.bytes, testTotal(), ft.vol.fallbacks.Load())
		}
	}
	ft, _ := testFetcher(t, ReadVolume, "AKGOOD", &fakeVolume{})
	if _, err := ft.fetch(context.Background(), testPlanned(""), testRanges, nil); err == nil || !strings.Contains(err.Error(), "names no volume pushdown service") {
		t.Fatalf("-read volume of a file without a volume service: %v", err)
	}
}

// An endpoint that cannot be reached costs no byte: its ranges are read
// through the S3 gateway, counted as fallbacks; for a while after, its
// files go straight to the gateway. -read volume fails instead.
func TestAnUnreachableVolumeServiceFallsBackToTheGatewayWithEveryByte(t *testing.T) {
	dead := deadAddress(t)
	ft, fs := testFetcher(t, ReadAuto, "AKGOOD", &fakeVolume{})
	for i := 0; i < 2; i++ {
		sf, err := ft.fetch(context.Background(), testPlanned(dead), testRanges, nil)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		wantTestBytes(t, sf)
	}
	if fs.bytes != 2*testTotal() || ft.vol.bytes.Load() != 0 || ft.vol.fallbacks.Load() < 2 || !strings.Contains(*ft.vol.reason.Load(), dead) {
		t.Fatalf("S3 read %d bytes of %d, volume %d, %d fallbacks (%v)", fs.bytes, 2*testTotal(), ft.vol.bytes.Load(), ft.vol.fallbacks.Load(), ft.vol.reason.Load())
	}
	if ft.volume.isDown(dead) == nil {
		t.Fatalf("the unreachable endpoint is not skipped after failing")
	}
	strict, fs2 := testFetcher(t, ReadVolume, "AKGOOD", &fakeVolume{})
	if _, err := strict.fetch(context.Background(), testPlanned(dead), testRanges, nil); status.Code(err) != codes.Unavailable || fs2.gets != 0 {
		t.Fatalf("-read volume from an unreachable endpoint: %v (code %s), %d S3 GETs", err, status.Code(err), fs2.gets)
	}
}

// A volume service's refusal falls back only to a gateway read signed with
// the same credentials: a caller the gateway allows gets every byte, one it
// refuses gets AccessDenied and no byte; -read volume returns the refusal.
func TestARefusedVolumeReadFallsBackOnlyToWhatTheGatewayAllowsTheSameCaller(t *testing.T) {
	refused := status.Error(codes.PermissionDenied, `ReadRanges: identity "alice" may not read`)
	ft, fs := testFetcher(t, ReadAuto, "AKGOOD", &fakeVolume{refuse: refused})
	sf, err := ft.fetch(context.Background(), testPlanned("volume"), testRanges, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantTestBytes(t, sf)
	if fs.bytes != testTotal() || ft.vol.fallbacks.Load() == 0 || ft.volume.isDown("volume") != nil {
		t.Fatalf("allowed by S3: %d S3 bytes of %d, %d fallbacks, endpoint down: %v", fs.bytes, testTotal(), ft.vol.fallbacks.Load(), ft.volume.isDown("volume"))
	}
	ft, fs = testFetcher(t, ReadAuto, "AKBAD", &fakeVolume{refuse: refused})
	if sf, err := ft.fetch(context.Background(), testPlanned("volume"), testRanges, nil); err == nil || !strings.Contains(err.Error(), "AccessDenied") || sf != nil || fs.bytes != 0 {
		t.Fatalf("refused by both: %v, %d S3 bytes", err, fs.bytes)
	}
	ft, fs = testFetcher(t, ReadVolume, "AKGOOD", &fakeVolume{refuse: refused})
	if _, err := ft.fetch(context.Background(), testPlanned("volume"), testRanges, nil); status.Code(err) != codes.PermissionDenied || fs.gets != 0 {
		t.Fatalf("-read volume, refused: %v, %d S3 GETs", err, fs.gets)
	}
}

// deadAddress is a loopback address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
