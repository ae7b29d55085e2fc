package access

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

	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// S3 callers sign a pushdown call the way an S3 client signs a request:
//
//	client:  SigV4 over  POST https://<service host:port>/pushdown/<Method>
//	         x-amz-content-sha256 = sha256(deterministic protobuf of the request)
//	         → metadata: authorization, x-amz-date, x-amz-content-sha256 [, x-amz-security-token]
//	service: the same request rebuilt ─▶ s3api IdentityAccessManagement.AuthenticateRequest
//	         payload hash re-computed and compared; Read checked per file

// SignedPath is the request path a SigV4 signature of method covers.
func SignedPath(method string) string { return "/pushdown/" + method }

// SignedHostKey is the metadata key naming the host a call's signature
// was made for (the address the client dialed). The host binds nothing
// here (every pushdown service is reached the same way), but SigV4 signs
// it, so the service must rebuild the request with the one signed.
const SignedHostKey = "x-pushdown-signed-host"

// SignedHeaders are the metadata keys that carry a signature.
var SignedHeaders = []string{"authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}

// PayloadHash is the hex SHA-256 of a request's deterministic protobuf
// encoding, the payload a SigV4 signature covers.
func PayloadHash(req proto.Message) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// IAM checks S3 identities with the S3 gateway's own code, against the
// same identities (the static config file, if any, and the filer's IAM
// store), kept fresh.
type IAM struct {
	iam    *s3api.IdentityAccessManagement
	cancel context.CancelFunc
}

// NewIAM loads the cluster's S3 identities and refreshes them every 10 s.
func NewIAM(filer pb.ServerAddress, dial grpc.DialOption, s3ConfigFile string) *IAM {
	fc := wdclient.NewFilerClient([]pb.ServerAddress{filer}, dial, "")
	iam := s3api.NewIdentityAccessManagement(&s3api.S3ApiServerOption{Filers: []pb.ServerAddress{filer}, GrpcDialOption: dial, Config: s3ConfigFile}, fc)
	ctx, cancel := context.WithCancel(context.Background())
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
	return &IAM{iam: iam, cancel: cancel}
}

// Close stops refreshing identities.
func (a *IAM) Close() {
	if a != nil {
		a.cancel()
		a.iam.Shutdown()
	}
}

// Open reports whether the cluster has no S3 identities (the gateway then
// serves everyone as its anonymous admin).
func (a *IAM) Open() bool {
	r, _ := http.NewRequest(http.MethodPost, "https://localhost/", nil)
	ident, code := a.iam.AuthenticateRequest(r)
	return code == s3err.ErrNone && ident != nil && ident.Name == "admin" && len(ident.Actions) == 1 && ident.Actions[0] == s3_constants.ACTION_ADMIN
}

type s3Caller struct {
	iam   *s3api.IdentityAccessManagement
	ident *s3api.Identity
	req   *http.Request
}

func (c *s3Caller) name() string {
	if c.ident == nil {
		return "anonymous"
	}
	return c.ident.Name
}

func (c *s3Caller) mayRead(bucket, key string) error {
	if code := c.iam.VerifyActionPermission(c.req, c.ident, s3_constants.ACTION_READ, bucket, key); code != s3err.ErrNone {
		return perr.New(perr.PermissionDenied, "identity %q may not read %s", c.name(), perr.Quote("s3://"+bucket+"/"+key))
	}
	return nil
}

func (c *s3Caller) mayWrite(bucket, key string) error {
	if code := c.iam.VerifyActionPermission(c.req, c.ident, s3_constants.ACTION_WRITE, bucket, key); code != s3err.ErrNone {
		return perr.New(perr.PermissionDenied, "identity %q may not write %s", c.name(), perr.Quote("s3://"+bucket+"/"+key))
	}
	return nil
}

func (a *IAM) authenticate(ctx context.Context, method string, req proto.Message) (*s3Caller, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return a.check(ctx, method, md, req, true)
}

// check authenticates the S3 caller of a call from its metadata md (and,
// with checkPayload, the payload hash against req).
func (a *IAM) check(ctx context.Context, method string, md metadata.MD, req proto.Message, checkPayload bool) (*s3Caller, error) {
	r, err := signedRequest(ctx, method, md, req, checkPayload)
	if err != nil {
		return nil, metrics.Refused(metrics.ReasonBadSignature, err)
	}
	return a.checkRequest(method, r)
}

// checkRequest authenticates the S3 caller of a rebuilt signed request.
func (a *IAM) checkRequest(method string, r *http.Request) (*s3Caller, error) {
	ident, code := a.iam.AuthenticateRequest(r)
	if code != s3err.ErrNone {
		reason := metrics.ReasonBadSignature
		if r.Header.Get("authorization") == "" && r.URL.Query().Get("X-Amz-Signature") == "" {
			reason = metrics.ReasonUnsigned
		}
		return nil, metrics.Refused(reason, perr.New(perr.PermissionDenied, "%s: the request's S3 signature was not accepted: %s (sign pushdown calls with your S3 credentials, or call over the cluster's mTLS or with a service token; see the README)", method, describe(code)))
	}
	return &s3Caller{iam: a.iam, ident: ident, req: r}, nil
}

// signedRequest rebuilds the HTTP request the client signed from the
// call's metadata md; with checkPayload, the payload hash it claims must
// be req's (without, before the request is read, the signature is checked
// over the claimed hash, and the handler checks the hash).
func signedRequest(ctx context.Context, method string, md metadata.MD, req proto.Message, checkPayload bool) (*http.Request, error) {
	// The host the client signed: it says so (SignedHostKey), since the
	// :authority gRPC sends is the TLS server name, without the port, when
	// the client's TLS configuration names one; else :authority.
	authority := first(md, SignedHostKey)
	if authority == "" {
		authority = first(md, ":authority")
	}
	if authority == "" || len(authority) > 255 || strings.ContainsAny(authority, "/?#@ ") {
		authority = "localhost"
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+authority+SignedPath(method), nil)
	if err != nil {
		return nil, perr.New(perr.PermissionDenied, "%s: authority %s: %v", method, perr.Quote(authority), err)
	}
	r.Host = authority
	for _, k := range SignedHeaders {
		v := first(md, k)
		if k == "authorization" {
			// A bearer token may travel beside the signature: take the
			// SigV4 one.
			v = awsSignature(md)
		}
		if len(v) > 8192 {
			return nil, perr.New(perr.PermissionDenied, "%s: %s metadata of %d bytes is too long", method, k, len(v))
		}
		if v != "" {
			r.Header.Set(k, v)
		}
	}
	if claimed := r.Header.Get("x-amz-content-sha256"); claimed != "" {
		if !checkPayload {
			return r, nil
		}
		want, err := PayloadHash(req)
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "%s: encode request: %v", method, err)
		}
		if claimed != want {
			return nil, perr.New(perr.PermissionDenied, "%s: the signed payload hash does not match the request (x-amz-content-sha256 %s, request %s)", method, perr.Quote(claimed), want)
		}
	} else if r.Header.Get("authorization") != "" {
		return nil, perr.New(perr.PermissionDenied, "%s: a signed request must carry x-amz-content-sha256", method)
	}
	return r, nil
}

func first(md metadata.MD, k string) string {
	if v := md.Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}

func describe(code s3err.ErrorCode) string {
	e := s3err.GetAPIError(code)
	if e.Description != "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Description)
	}
	return url.PathEscape(e.Code)
}
