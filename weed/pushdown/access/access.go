// Package access decides who may call the pushdown services and on which
// files. Both services use it the same way, before any work and before
// saying anything about what exists:
//
//	caller ─▶ Guard.Authenticate(method, request)
//	   ├─ client certificate verified against the cluster CA (gRPC mTLS),
//	   │  the call not S3-signed ─────────────────────────────────────────▶ cluster member
//	   ├─ "authorization: Bearer <JWT>" signed with a service key ──────────▶ scoped by allowed_prefixes
//	   └─ otherwise an S3 identity: AWS SigV4 over POST /pushdown/<Method>
//	      (payload = sha256 of the request's deterministic protobuf), or the
//	      anonymous identity when unsigned — the S3 gateway's own IAM decides
//
// A call that carries an S3 signature is its signer's even over a cluster
// certificate: a process of the cluster reading for a user (the Flight SQL
// endpoint, a CLI on a cluster host) is authorized as that user, never as a
// cluster member, so the certificate cannot widen what the user may read.
//
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
	"google.golang.org/grpc/metadata"
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
	Methods  []string // Service: allowed HTTP methods, as the filer reads them (empty: all)
	s3       *s3Caller
	guard    *Guard
}

// Authenticate establishes who sent req (a request of RPC method, as
// "Plan" or "ReadRanges"). Every failure is PERMISSION_DENIED and says
// nothing about files or tables.
func (g *Guard) Authenticate(ctx context.Context, method string, req proto.Message) (*Caller, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if name, ok := clusterMember(ctx); ok && !s3Signed(md) {
		return &Caller{Kind: Cluster, Name: name, guard: g}, nil
	}
	if tok := BearerToken(ctx); tok != "" {
		grant, err := g.Keys.Verify(tok)
		if err != nil {
			return nil, metrics.Refused(metrics.ReasonToken, err)
		}
		return &Caller{Kind: Service, Name: "service token", Prefixes: grant.Prefixes, Methods: grant.Methods, guard: g}, nil
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

// Admit refuses, from the call's metadata alone and before its body is
// read, a caller Authenticate would refuse whatever the body: no
// certificate the cluster CA signed, no token the service key signed, and
// no S3 signature (or anonymous identity) the S3 IAM accepts over the
// payload hash the call claims. Authenticate still runs in the handler
// (the payload hash is checked against the body there).
func (g *Guard) Admit(ctx context.Context, method string, md metadata.MD) error {
	if _, ok := clusterMember(ctx); ok && !s3Signed(md) {
		return nil
	}
	if tok := bearerOf(md); tok != "" {
		if _, err := g.Keys.Verify(tok); err != nil {
			return metrics.Refused(metrics.ReasonToken, err)
		}
		return nil
	}
	if g.IAM == nil {
		return metrics.Refused(metrics.ReasonUnsigned, perr.New(perr.PermissionDenied, "%s: this service cannot check S3 identities; call it over the cluster's mTLS or with a service token", method))
	}
	_, err := g.IAM.check(ctx, method, md, nil, false)
	return err
}

// clusterMember returns the subject of the client certificate the
// cluster CA signed (gRPC mTLS), if the caller presented one.
func clusterMember(ctx context.Context) (string, bool) {
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 && len(info.State.VerifiedChains[0]) > 0 {
			return info.State.VerifiedChains[0][0].Subject.CommonName, true
		}
	}
	return "", false
}

// s3Signed tells whether a call carries an AWS signature: then it is its
// signer's.
func s3Signed(md metadata.MD) bool { return awsSignature(md) != "" }

// awsSignature is the AWS signature (SigV4 or V2) among a call's
// authorization metadata (a bearer token may travel beside it), or "".
func awsSignature(md metadata.MD) string {
	for _, a := range md.Get("authorization") {
		if strings.HasPrefix(a, "AWS4-") || strings.HasPrefix(a, "AWS ") {
			return a
		}
	}
	return ""
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
// a table bucket and not a side-index payload (.index/ folders are the
// pushdown services' own; the S3 gateway serves none of them either). It
// returns the validated location.
func (c *Caller) MayRead(ctx context.Context, loc string) (Location, error) {
	return c.may(ctx, loc, false)
}

// MayWrite checks the caller may write beside the file at loc (side-index
// payloads, persisted delete bitmaps under its .index/ folder): S3 Write on
// the file, or a cluster certificate, or a service token whose prefixes
// cover it and whose methods allow writing.
func (c *Caller) MayWrite(ctx context.Context, loc string) (Location, error) {
	return c.may(ctx, loc, true)
}

func (c *Caller) may(ctx context.Context, loc string, write bool) (Location, error) {
	l, err := ParseLocation(loc)
	if err != nil {
		return l, err
	}
	if IsIndexPath(l.Key) {
		return l, metrics.Refused(metrics.ReasonInvalidLocation, perr.New(perr.PermissionDenied, "%s is inside a side-index folder (%s/): the pushdown services serve table files only", perr.Quote(loc), IndexDir))
	}
	if err := c.mayPrefix(l, write); err != nil {
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

// CanRead reports, without counting a refusal, whether the caller may read
// the file at loc (a listing shows only what its caller may read).
func (c *Caller) CanRead(loc string) bool {
	l, err := ParseLocation(loc)
	if err != nil || IsIndexPath(l.Key) {
		return false
	}
	if c.Kind == S3 {
		return c.s3.mayRead(l.Bucket, l.Key) == nil
	}
	return c.allows(l.FilerPath, false)
}

// CanWrite reports, without counting a refusal, whether the caller may
// write beside a location MayRead accepted.
func (c *Caller) CanWrite(l Location) bool {
	if c.Kind == S3 {
		return c.s3.mayWrite(l.Bucket, l.Key) == nil
	}
	return c.allows(l.FilerPath, true)
}

// IndexDir is the hidden folder side-index payloads live in.
const IndexDir = ".index"

// IsIndexPath reports whether a key names something inside an .index/
// folder.
func IsIndexPath(key string) bool {
	return strings.HasPrefix(key, IndexDir+"/") || strings.Contains(key, "/"+IndexDir+"/")
}

// Allows reports whether a cluster member or service token may read l
// (false for S3 callers: their permissions are checked by MayRead).
func (c *Caller) Allows(l Location) bool {
	return c.allows(l.FilerPath, false)
}

// allows reports whether a cluster member, or a service token whose
// prefixes cover path and whose methods allow reading (or writing), may.
func (c *Caller) allows(path string, write bool) bool {
	switch c.Kind {
	case Cluster:
		return true
	case Service:
		return c.methodsAllow(write) && c.coveredByPrefixes(path)
	}
	return false
}

func (c *Caller) coveredByPrefixes(path string) bool {
	if len(c.Prefixes) == 0 {
		return true
	}
	for _, p := range c.Prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// methodsAllow reports whether the token's methods allow reading (or
// writing): none listed allow every method, as the filer takes it.
func (c *Caller) methodsAllow(write bool) bool {
	if len(c.Methods) == 0 {
		return true
	}
	want := ReadMethods
	if write {
		want = WriteMethods
	}
	for _, m := range c.Methods {
		for _, w := range want {
			if strings.EqualFold(m, w) {
				return true
			}
		}
	}
	return false
}

// mayPrefix checks an S3 caller's permission on the file, or a token's
// scope. A refusal names no path: what a token may not see, it does not
// learn the name of either (the caller knows what it asked for).
func (c *Caller) mayPrefix(l Location, write bool) error {
	if c.Kind == S3 {
		if write {
			return metrics.Refused(metrics.ReasonIdentity, c.s3.mayWrite(l.Bucket, l.Key))
		}
		return metrics.Refused(metrics.ReasonIdentity, c.s3.mayRead(l.Bucket, l.Key))
	}
	if !c.allows(l.FilerPath, write) {
		what := "read"
		if write {
			what = "write"
		}
		return metrics.Refused(metrics.ReasonScope, perr.New(perr.PermissionDenied, "the service token may not %s this file (outside its allowed prefixes or methods)", what))
	}
	return nil
}

// tableScoped checks, before the table is looked up, that a service
// token's prefixes reach the table's folder (<warehouse>/<namespace
// path>/<table>…): a prefix covering it, or inside it (a token for part of
// a table, whose files are then checked one by one). The refusal is the
// same whether or not the table exists.
func (c *Caller) tableScoped(warehouse, namespacePath, table string, write bool) error {
	if c.Kind != Service {
		return nil
	}
	dir := fileread.BucketsDir + "/" + warehouse + "/" + namespacePath + "/" + table
	ok := c.methodsAllow(write)
	if ok && len(c.Prefixes) > 0 {
		ok = false
		for _, p := range c.Prefixes {
			if strings.HasPrefix(dir, p) || strings.HasPrefix(p, dir) {
				ok = true
				break
			}
		}
	}
	if !ok {
		what := "read"
		if write {
			what = "write"
		}
		return metrics.Refused(metrics.ReasonScope, perr.New(perr.PermissionDenied, "the service token may not %s table %s in warehouse %s (outside its allowed prefixes or methods)",
			what, perr.Quote(strings.ReplaceAll(namespacePath, "/", ".")+"."+table), perr.Quote(warehouse)))
	}
	return nil
}

// MayReadTable checks, before the table is looked up, that an S3 caller may
// read the table's folder in its warehouse (<warehouse>/<namespace path>/<table>/),
// or that a service token's prefixes reach it: the same answer whether or
// not the table exists. Cluster members may plan any table; a token's
// files are checked again one by one as the plan resolves them.
func (c *Caller) MayReadTable(warehouse, namespacePath, table string) error {
	if c.Kind != S3 {
		return c.tableScoped(warehouse, namespacePath, table, false)
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
		return c.tableScoped(warehouse, namespacePath, table, true)
	}
	if err := c.s3.mayWrite(warehouse, namespacePath+"/"+table+"/"); err != nil {
		return perr.New(perr.PermissionDenied, "identity %q may not write table %s in warehouse %s", c.Name, perr.Quote(strings.ReplaceAll(namespacePath, "/", ".")+"."+table), perr.Quote(warehouse))
	}
	return nil
}

// String describes the caller for logs.
func (c *Caller) String() string { return fmt.Sprintf("%s %q", c.Kind, c.Name) }
