package access

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// emptyPayloadHash is the SHA-256 of no bytes.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// AuthenticateKeys establishes the S3 identity an access key and its secret
// belong to (a front end whose callers present them, as Flight SQL's basic
// authentication does): a request signed with them is checked by the S3
// gateway's own IAM code, as a signed pushdown call is. Empty keys are the
// anonymous identity, accepted only where the gateway accepts it. Every
// failure is PERMISSION_DENIED and names no identity.
func (g *Guard) AuthenticateKeys(ctx context.Context, method, accessKey, secretKey string) (*Caller, error) {
	if g.IAM == nil {
		return nil, metrics.Refused(metrics.ReasonUnsigned, perr.New(perr.PermissionDenied, "%s: this service cannot check S3 identities", method))
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://localhost"+SignedPath(method), nil)
	if err != nil {
		return nil, perr.New(perr.PermissionDenied, "%s: %v", method, err)
	}
	r.Header.Set("x-amz-content-sha256", emptyPayloadHash)
	if accessKey != "" || secretKey != "" {
		if len(accessKey) > 1024 || len(secretKey) > 1024 {
			return nil, metrics.Refused(metrics.ReasonBadSignature, perr.New(perr.PermissionDenied, "%s: credentials too long", method))
		}
		creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
		if err := v4.NewSigner().SignHTTP(ctx, creds, r, emptyPayloadHash, "s3", "us-east-1", time.Now()); err != nil {
			return nil, perr.New(perr.PermissionDenied, "%s: sign: %v", method, err)
		}
	}
	c, err := g.IAM.checkRequest(method, r)
	if err != nil {
		return nil, err
	}
	return &Caller{Kind: S3, Name: c.name(), s3: c, guard: g}, nil
}
