package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/s3api"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3_constants"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3err"
	"github.com/seaweedfs/seaweedfs/weed/wdclient"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Plan requests are authorized the way the S3 gateway authorizes a read:
// the caller signs the request with its S3 credentials (AWS Signature V4,
// carried in gRPC metadata), the catalog authenticates the signature
// against the cluster's S3 identities and checks that the identity may
// Read every file the plan covers. A caller that may not read a data file
// cannot plan over it. With no S3 identities configured (S3 open to
// anonymous access), every caller may plan, as every caller may read.
//
//	client: SigV4 over  POST https://<catalog host:port>/pushdown/Plan
//	        x-amz-content-sha256 = sha256(deterministic protobuf of the request)
//	        → metadata: authorization, x-amz-date, x-amz-content-sha256 [, x-amz-security-token]
//	catalog: same request rebuilt ─▶ s3api IdentityAccessManagement.AuthenticateRequest
//	         payload hash re-computed and compared
//	         every data / delete file: VerifyActionPermission(Read, bucket, key)

// SignedPath is the request path SigV4 signatures of Plan requests cover.
const SignedPath = "/pushdown/Plan"

// SignedHeaders are the metadata keys that carry the signature.
var SignedHeaders = []string{"authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}

// PayloadHash is the hex SHA-256 of the request's deterministic protobuf
// encoding, the payload a SigV4 signature of a Plan request covers.
func PayloadHash(req *pushdown_pb.ParquetPushdownRequest) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Access authorizes plans by S3 identity.
type Access struct {
	iam    *s3api.IdentityAccessManagement
	cancel context.CancelFunc
}

// NewAccess loads the cluster's S3 identities the way the S3 gateway does
// (the static config file, if any, and the filer's IAM store) and keeps
// them fresh.
func NewAccess(filer pb.ServerAddress, dial grpc.DialOption, s3ConfigFile string) *Access {
	fc := wdclient.NewFilerClient([]pb.ServerAddress{filer}, dial, "")
	iam := s3api.NewIdentityAccessManagement(&s3api.S3ApiServerOption{Filers: []pb.ServerAddress{filer}, GrpcDialOption: dial, Config: s3ConfigFile}, fc)
	ctx, cancel := context.WithCancel(context.Background())
	a := &Access{iam: iam, cancel: cancel}
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := iam.LoadS3ApiConfigurationFromCredentialManager(); err != nil {
					glog.V(1).Infof("pushdown: reload S3 identities: %v", err)
				}
			}
		}
	}()
	return a
}

// Close stops refreshing identities.
func (a *Access) Close() {
	if a != nil {
		a.cancel()
		a.iam.Shutdown()
	}
}

// Authorize checks the caller may read every file of the plan.
func (a *Access) Authorize(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest, files func(yield func(string) bool)) error {
	if a == nil {
		return nil
	}
	r, err := signedRequest(ctx, req)
	if err != nil {
		return err
	}
	ident, code := a.iam.AuthenticateRequest(r)
	if code != s3err.ErrNone {
		return perr.New(perr.PermissionDenied, "the request's S3 signature was not accepted: %s (sign Plan requests with your S3 credentials; see the README)", describe(code))
	}
	var denied error
	checked := map[string]bool{}
	files(func(loc string) bool {
		if checked[loc] {
			return true
		}
		checked[loc] = true
		bucket, key, err := bucketKey(loc)
		if err != nil {
			denied = err
			return false
		}
		if code := a.iam.VerifyActionPermission(r, ident, s3_constants.ACTION_READ, bucket, key); code != s3err.ErrNone {
			denied = perr.New(perr.PermissionDenied, "identity %q may not read %s, so it may not plan over it", ident.Name, loc)
			return false
		}
		return true
	})
	return denied
}

// signedRequest rebuilds the HTTP request the client signed.
func signedRequest(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*http.Request, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	authority := first(md, ":authority")
	if authority == "" {
		authority = "localhost"
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+authority+SignedPath, nil)
	if err != nil {
		return nil, perr.New(perr.InvalidArgument, "authority %q: %v", authority, err)
	}
	r.Host = authority
	for _, k := range SignedHeaders {
		v := first(md, k)
		if k == "authorization" {
			// A connector-trusted bearer token may travel beside the
			// signature: take the SigV4 one.
			v = ""
			for _, a := range md.Get(k) {
				if strings.HasPrefix(a, "AWS4-") || strings.HasPrefix(a, "AWS ") {
					v = a
				}
			}
		}
		if v != "" {
			r.Header.Set(k, v)
		}
	}
	if claimed := r.Header.Get("x-amz-content-sha256"); claimed != "" {
		want, err := PayloadHash(req)
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "encode request: %v", err)
		}
		if claimed != want {
			return nil, perr.New(perr.PermissionDenied, "the signed payload hash does not match the request (x-amz-content-sha256 %s, request %s)", claimed, want)
		}
	} else if r.Header.Get("authorization") != "" {
		return nil, perr.New(perr.PermissionDenied, "a signed Plan request must carry x-amz-content-sha256")
	}
	return r, nil
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

func bucketKey(loc string) (string, string, error) {
	fp, err := fileread.FilerPath(loc)
	if err != nil {
		return "", "", perr.New(perr.InvalidArgument, "%v", err)
	}
	rest, ok := strings.CutPrefix(fp, fileread.BucketsDir+"/")
	if !ok {
		return "", "", perr.New(perr.PermissionDenied, "%s is not an object in a bucket", loc)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	return bucket, key, nil
}

func describe(code s3err.ErrorCode) string {
	e := s3err.GetAPIError(code)
	if e.Description != "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Description)
	}
	return url.PathEscape(e.Code)
}
