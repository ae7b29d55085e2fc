// Package access decides who may call the pushdown services and on which
// files. Both services use it the same way, before any work and before
// saying anything about what exists:
//
//	caller ─▶ Guard.Authenticate(method, request)
//	   ├─ client certificate verified against the cluster CA (gRPC mTLS) ──▶ cluster member
//	   ├─ "authorization: Bearer <JWT>" signed with a service key ──────────▶ scoped by allowed_prefixes
//	   └─ otherwise an S3 identity: AWS SigV4 over POST /pushdown/<Method>
//	      (payload = sha256 of the request's deterministic protobuf), or the
//	      anonymous identity when unsigned — the S3 gateway's own IAM decides
//	                                  │
//	Caller.MayRead(file) ─▶ path valid (length, segments) ─▶ inside a table bucket
//	                       ─▶ token prefixes / S3 Read permission on bucket+key
//
// A cluster with no security configured at all (no mTLS, no signing key,
// no S3 identities) is as open as its S3 gateway is then: every caller is
// the gateway's anonymous admin, but still only inside table buckets.
//
// Service keys: the catalog signs short-lived tokens for its calls to the
// volume pushdown services with security.toml's [jwt.filer_signing] key,
// or, when none is configured, with a key the cluster keeps in the filer
// (ServiceKeyPath) — readable only by those who can read the filer
// directly, who can read every file anyway.
package access

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Kind is how a caller proved who it is.
type Kind int

const (
	// S3 callers are identified by the S3 gateway's IAM (signed, or the
	// anonymous identity).
	S3 Kind = iota
	// Cluster callers presented a client certificate the cluster CA signed.
	Cluster
	// Service callers presented a token signed with a service key.
	Service
)

func (k Kind) String() string {
	switch k {
	case Cluster:
		return "cluster certificate"
	case Service:
		return "service token"
	}
	return "S3 identity"
}

// Limits on client-supplied names, checked before anything is looked up.
const (
	MaxPathBytes    = 4096 // a file location
	MaxSegmentBytes = 1024 // one segment of it
)

// Guard authenticates callers of one service.
type Guard struct {
	// IAM authorizes S3 callers; nil refuses every S3 caller (a service
	// that cannot check identities must not guess).
	IAM *IAM
	// Keys verify service tokens.
	Keys *Keys
	// Buckets says which buckets are table buckets.
	Buckets *TableBuckets
}

// Caller is an authenticated caller.
type Caller struct {
	Kind     Kind
	Name     string   // identity name, certificate subject or "service token"
	Prefixes []string // Service: allowed filer path prefixes (empty: all)
	s3       *s3Caller
	guard    *Guard
}

// Authenticate establishes who sent req (a request of RPC method, as
// "Plan" or "ReadRanges"). Every failure is PERMISSION_DENIED and says
// nothing about files or tables.
func (g *Guard) Authenticate(ctx context.Context, method string, req proto.Message) (*Caller, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 && len(info.State.VerifiedChains[0]) > 0 {
			return &Caller{Kind: Cluster, Name: info.State.VerifiedChains[0][0].Subject.CommonName, guard: g}, nil
		}
	}
	if tok := BearerToken(ctx); tok != "" {
		prefixes, err := g.Keys.Verify(tok)
		if err != nil {
			return nil, metrics.Refused(metrics.ReasonToken, err)
		}
		return &Caller{Kind: Service, Name: "service token", Prefixes: prefixes, guard: g}, nil
	}
	if g.IAM == nil {
		return nil, metrics.Refused(metrics.ReasonUnsigned, perr.New(perr.PermissionDenied, "%s: this service cannot check S3 identities; call it over the cluster's mTLS or with a service token", method))
	}
	c, err := g.IAM.authenticate(ctx, method, req)
	if err != nil {
		return nil, err
	}
	return &Caller{Kind: S3, Name: c.name(), s3: c, guard: g}, nil
}

// Location is a validated file location inside a bucket.
type Location struct {
	FilerPath   string // /buckets/<bucket>/<key>
	Bucket, Key string
}

// ParseLocation validates a file location (s3://bucket/key or
// /buckets/bucket/key) without looking anything up: bounded length, no
// empty, "." or ".." segments, no control characters, inside a bucket.
func ParseLocation(loc string) (Location, error) {
	if len(loc) > MaxPathBytes {
		return Location{}, perr.New(perr.InvalidArgument, "file location of %d bytes exceeds the limit of %d", len(loc), MaxPathBytes)
	}
	if loc == "" {
		return Location{}, perr.New(perr.InvalidArgument, "file location is empty")
	}
	for i := 0; i < len(loc); i++ {
		if loc[i] < 0x20 || loc[i] == 0x7f {
			return Location{}, perr.New(perr.InvalidArgument, "file location %s holds a control character", perr.Quote(loc))
		}
	}
	var fp string
	if strings.HasPrefix(loc, "/") {
		fp = loc
	} else {
		var err error
		if fp, err = fileread.FilerPath(loc); err != nil {
			if scheme, _, ok := strings.Cut(loc, "://"); ok && !strings.EqualFold(scheme, "s3") && !strings.EqualFold(scheme, "s3a") && !strings.EqualFold(scheme, "s3n") {
				return Location{}, perr.New(perr.InvalidArgument, "file location %s: scheme %s is not stored in this cluster (want s3://bucket/key)", perr.Quote(loc), perr.Quote(scheme))
			}
			return Location{}, perr.New(perr.InvalidArgument, "file location %s: want s3://bucket/key", perr.Quote(loc))
		}
	}
	rest, ok := strings.CutPrefix(fp, fileread.BucketsDir+"/")
	if !ok {
		return Location{}, metrics.Refused(metrics.ReasonInvalidLocation, perr.New(perr.PermissionDenied, "%s is not an object in a bucket", perr.Quote(loc)))
	}
	segs := strings.Split(rest, "/")
	if len(segs) < 2 {
		return Location{}, perr.New(perr.InvalidArgument, "file location %s names a bucket, not an object in it", perr.Quote(loc))
	}
	for _, s := range segs {
		switch {
		case s == "":
			return Location{}, perr.New(perr.InvalidArgument, "file location %s has an empty path segment", perr.Quote(loc))
		case s == "." || s == "..":
			return Location{}, perr.New(perr.InvalidArgument, "file location %s has a %q path segment", perr.Quote(loc), s)
		case len(s) > MaxSegmentBytes:
			return Location{}, perr.New(perr.InvalidArgument, "file location %s has a path segment of %d bytes (limit %d)", perr.Quote(loc), len(s), MaxSegmentBytes)
		}
	}
	return Location{FilerPath: fp, Bucket: segs[0], Key: strings.Join(segs[1:], "/")}, nil
}

// MayRead checks the caller may read the file at loc, which must be inside
// a table bucket. It returns the validated location.
func (c *Caller) MayRead(ctx context.Context, loc string) (Location, error) {
	l, err := ParseLocation(loc)
	if err != nil {
		return l, err
	}
	if err := c.mayReadPrefix(l); err != nil {
		return l, err
	}
	ok, err := c.guard.Buckets.IsTableBucket(ctx, l.Bucket)
	if err != nil {
		return l, err
	}
	if !ok {
		return l, metrics.Refused(metrics.ReasonNotTableBucket, perr.New(perr.PermissionDenied, "%s is not inside a table bucket: the pushdown services read only Iceberg table buckets", perr.Quote(loc)))
	}
	return l, nil
}

// Allows reports whether a cluster member or service token may read l
// (false for S3 callers: their permissions are checked by MayRead).
func (c *Caller) Allows(l Location) bool {
	switch c.Kind {
	case Cluster:
		return true
	case Service:
		if len(c.Prefixes) == 0 {
			return true
		}
		for _, p := range c.Prefixes {
			if strings.HasPrefix(l.FilerPath, p) {
				return true
			}
		}
	}
	return false
}

func (c *Caller) mayReadPrefix(l Location) error {
	if c.Kind == S3 {
		return metrics.Refused(metrics.ReasonIdentity, c.s3.mayRead(l.Bucket, l.Key))
	}
	if !c.Allows(l) {
		return metrics.Refused(metrics.ReasonScope, perr.New(perr.PermissionDenied, "%s is outside the service token's allowed prefixes", perr.Quote(l.FilerPath)))
	}
	return nil
}

// MayReadTable checks, before the table is looked up, that an S3 caller may
// read the table's folder in its warehouse (<warehouse>/<namespace path>/<table>/):
// the same answer whether or not the table exists. Cluster members and
// service tokens may plan any table (their tokens scope files, checked as
// the plan resolves them).
func (c *Caller) MayReadTable(warehouse, namespacePath, table string) error {
	if c.Kind != S3 {
		return nil
	}
	if err := c.s3.mayRead(warehouse, namespacePath+"/"+table+"/"); err != nil {
		return metrics.Refused(metrics.ReasonTable, perr.New(perr.PermissionDenied, "identity %q may not read table %s in warehouse %s", c.Name, perr.Quote(strings.ReplaceAll(namespacePath, "/", ".")+"."+table), perr.Quote(warehouse)))
	}
	return nil
}

// MayWriteTable checks, before the table is looked up, that an S3 caller
// may write the table's folder (building or dropping its side indexes
// changes what the cluster stores for it).
func (c *Caller) MayWriteTable(warehouse, namespacePath, table string) error {
	if c.Kind != S3 {
		return nil
	}
	if err := c.s3.mayWrite(warehouse, namespacePath+"/"+table+"/"); err != nil {
		return perr.New(perr.PermissionDenied, "identity %q may not write table %s in warehouse %s", c.Name, perr.Quote(strings.ReplaceAll(namespacePath, "/", ".")+"."+table), perr.Quote(warehouse))
	}
	return nil
}

// String describes the caller for logs.
func (c *Caller) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Name) }
