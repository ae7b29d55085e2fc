package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3_constants"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3err"
)

// SigV4-signed HTTP requests (Iceberg REST clients with rest.sigv4-enabled)
// are checked the way upstream's Iceberg REST catalog checks them, by the S3
// gateway's own IAM code against the same identities:
//
//	request + its body (read, bounded) ─▶ s3api AuthenticateRequest
//	    (signature, date skew, the body's hash when the signing service is not s3)
//	  ─▶ a claimed x-amz-content-sha256 (hex, or Iceberg Java's base64) must be the body's
//	  ─▶ HTTPCaller: who signed, and a signer to ask upstream on its behalf

// HTTPCaller is the S3 identity that signed an HTTP request.
type HTTPCaller struct {
	// Name is the identity's name.
	Name string
	// AccessKey is the access key that signed (on a cluster without
	// identities, where every caller is the gateway's anonymous admin and
	// nothing is verified, the one the signature names).
	AccessKey string
	secret    string // "" on a cluster without identities
	region    string
	service   string
}

// SignatureError is a refused signature, named by upstream's S3 error code.
type SignatureError struct {
	Code s3err.ErrorCode
}

func (e *SignatureError) Error() string {
	return "the request's S3 signature was not accepted: " + describe(e.Code)
}

// HTTPStatus is the status upstream's Iceberg REST catalog answers the
// refusal with.
func (e *SignatureError) HTTPStatus() int { return s3err.GetAPIError(e.Code).HTTPStatusCode }

// Description is upstream's description of the refusal.
func (e *SignatureError) Description() string { return s3err.GetAPIError(e.Code).Description }

// IsSigV4 reports whether an Authorization header is an AWS signature.
func IsSigV4(authorization string) bool {
	return strings.HasPrefix(authorization, "AWS4-") || strings.HasPrefix(authorization, "AWS ")
}

// VerifyHTTP checks the AWS signature of r, whose body has been read into
// body (r itself is not changed), against the cluster's S3 identities.
// Temporary (STS session) credentials are refused: nothing could sign
// on their behalf. Every refusal is a *SignatureError.
func (a *IAM) VerifyHTTP(r *http.Request, body []byte) (*HTTPCaller, error) {
	rc := s3_constants.EnsureIdentityHolder(r.Clone(r.Context()))
	rc.Body = io.NopCloser(bytes.NewReader(body))
	rc.ContentLength = int64(len(body))
	ident, code := a.iam.AuthenticateRequest(rc)
	if code != s3err.ErrNone {
		return nil, &SignatureError{Code: code}
	}
	if !payloadMatches(r.Header.Get("X-Amz-Content-Sha256"), body) {
		return nil, &SignatureError{Code: s3err.ErrContentSHA256Mismatch}
	}
	c := &HTTPCaller{Name: ident.Name}
	c.AccessKey, c.region, c.service = scopeOf(r.Header.Get("Authorization"))
	if a.Open() {
		return c, nil
	}
	c.AccessKey, c.secret = s3_constants.StoredCredentialFromContext(rc.Context())
	if c.AccessKey == "" || c.secret == "" {
		return nil, &SignatureError{Code: s3err.ErrAccessDenied}
	}
	return c, nil
}

// payloadMatches reports whether a claimed x-amz-content-sha256 is body's
// hash: hex as AWS defines it, or base64 as Iceberg Java sends it; none
// and UNSIGNED-PAYLOAD claim nothing (without a claim, AuthenticateRequest
// hashed the body itself, as upstream's catalog does).
func payloadMatches(claimed string, body []byte) bool {
	if claimed == "" || claimed == "UNSIGNED-PAYLOAD" {
		return true
	}
	sum := sha256.Sum256(body)
	var got []byte
	if len(claimed) == 64 {
		got, _ = hex.DecodeString(claimed)
	} else {
		got, _ = base64.StdEncoding.DecodeString(claimed)
	}
	return len(got) == len(sum) && subtle.ConstantTimeCompare(got, sum[:]) == 1
}

// scopeOf reads the access key, region and service of a SigV4
// Authorization header's credential (AK/date/region/service/aws4_request).
func scopeOf(authorization string) (accessKey, region, service string) {
	_, cred, ok := strings.Cut(authorization, "Credential=")
	if !ok {
		return "", "us-east-1", "s3"
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(strings.TrimSpace(cred), "/")
	if len(parts) != 5 || parts[2] == "" || parts[3] == "" {
		return "", "us-east-1", "s3"
	}
	return parts[0], parts[2], parts[3]
}

// Sign signs req (a request without a body) as the caller, in the region
// and for the service of the caller's own signature; on a cluster without
// identities it leaves req unsigned.
func (c *HTTPCaller) Sign(ctx context.Context, req *http.Request) error {
	if c.secret == "" {
		return nil
	}
	req.Header.Set("X-Amz-Content-Sha256", emptyPayloadHash)
	creds := aws.Credentials{AccessKeyID: c.AccessKey, SecretAccessKey: c.secret}
	return v4.NewSigner().SignHTTP(ctx, creds, req, emptyPayloadHash, c.service, c.region, time.Now())
}
