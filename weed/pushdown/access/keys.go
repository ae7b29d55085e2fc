package access

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// ServiceKeyDir and ServiceKeyName locate the cluster's service key in the
// filer when security.toml configures no [jwt.filer_signing] key.
const (
	ServiceKeyDir  = "/etc/pushdown"
	ServiceKeyName = "service.key"
)

// TokenTTL is how long a service token minted for one call is valid.
const TokenTTL = 2 * time.Minute

// MaxTokenBytes bounds a bearer token before it is parsed.
const MaxTokenBytes = 64 << 10

// Keys sign and verify service tokens (HS256, SeaweedFS's filer claims).
type Keys struct {
	key security.SigningKey
	// verified remembers tokens whose signature checked out, until they
	// expire: a connector or catalog sends the same token with every call
	// of its TokenTTL, each verified once.
	verified *lru.Cache[string, verifiedToken]
}

// verifiedToken is what a verified token allows, and until when.
type verifiedToken struct {
	prefixes []string
	methods  []string
	expires  time.Time // zero: the token carries no expiry
}

// Methods a service token may allow (the filer's allowed_methods are HTTP
// methods; none listed allows every method, as the filer takes it).
var (
	ReadMethods  = []string{"GET", "HEAD"} // reading files and their indexes
	WriteMethods = []string{"PUT", "POST"} // writing beside them (.index/ payloads)
)

// TokenGrant is what a verified service token allows.
type TokenGrant struct {
	Prefixes []string // filer path prefixes (none: every table bucket)
	Methods  []string // HTTP methods (none: all)
}

// verifiedTokens bounds the tokens a Keys remembers.
const verifiedTokens = 4096

// NewKeys uses key (security.toml's [jwt.filer_signing] key).
func NewKeys(key []byte) *Keys {
	verified, _ := lru.New[string, verifiedToken](verifiedTokens)
	return &Keys{key: key, verified: verified}
}

// FilerFunc runs fn with a filer client.
type FilerFunc func(fn func(filer_pb.SeaweedFilerClient) error) error

// LoadKeys returns the [jwt.filer_signing] key when configured; otherwise
// the cluster's service key in the filer, created on first use.
func LoadKeys(ctx context.Context, configured string, filer FilerFunc) (*Keys, error) {
	if configured != "" {
		return NewKeys([]byte(configured)), nil
	}
	var key []byte
	// a filer still starting (weed mini, weed server) refuses connections
	// for a moment: retried until ctx ends
	var err error
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		if err = loadKey(ctx, filer, &key); err == nil || status.Code(err) != codes.Unavailable {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pushdown service key: %w (filer unavailable until %v)", err, ctx.Err())
		case <-time.After(backoff):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pushdown service key: %w", err)
	}
	return NewKeys(key), nil
}

// loadKey reads the cluster's service key from the filer into key,
// creating it when there is none.
func loadKey(ctx context.Context, filer FilerFunc, key *[]byte) error {
	return filer(func(c filer_pb.SeaweedFilerClient) error {
		for attempt := 0; attempt < 3; attempt++ {
			resp, err := filer_pb.LookupEntry(ctx, c, &filer_pb.LookupDirectoryEntryRequest{Directory: ServiceKeyDir, Name: ServiceKeyName})
			if err == nil {
				if k := strings.TrimSpace(string(resp.Entry.GetContent())); len(k) >= 32 {
					*key = []byte(k)
					return nil
				}
				return fmt.Errorf("%s/%s holds no usable key (%d bytes); remove it to have a new one made", ServiceKeyDir, ServiceKeyName, len(resp.Entry.GetContent()))
			}
			if !errors.Is(err, filer_pb.ErrNotFound) {
				return err
			}
			raw := make([]byte, 32)
			if _, err := rand.Read(raw); err != nil {
				return err
			}
			now := time.Now().Unix()
			_, err = c.CreateEntry(ctx, &filer_pb.CreateEntryRequest{Directory: ServiceKeyDir, OExcl: true, Entry: &filer_pb.Entry{
				Name: ServiceKeyName, Content: []byte(hex.EncodeToString(raw)),
				Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o600, FileSize: 64},
			}})
			if err != nil {
				// Another service made it first: read theirs.
				continue
			}
		}
		return fmt.Errorf("could not create or read %s/%s", ServiceKeyDir, ServiceKeyName)
	})
}

// Token mints a service token valid for TokenTTL, allowing methods (none =
// all) under prefixes (filer paths; none = every table bucket).
func (k *Keys) Token(prefixes, methods []string) (string, error) {
	if k == nil || len(k.key) == 0 {
		return "", nil
	}
	claims := security.SeaweedFilerClaims{AllowedPrefixes: prefixes, AllowedMethods: methods,
		RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(TokenTTL)), Issuer: "lakeweed-pushdown"}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(k.key))
}

// Verify checks a bearer token and returns what it allows.
func (k *Keys) Verify(tok string) (TokenGrant, error) {
	if k == nil || len(k.key) == 0 {
		return TokenGrant{}, perr.New(perr.PermissionDenied, "a bearer token was sent but this service has no key to verify it")
	}
	if len(tok) > MaxTokenBytes {
		return TokenGrant{}, perr.New(perr.PermissionDenied, "bearer token of %d bytes exceeds %d", len(tok), MaxTokenBytes)
	}
	if v, ok := k.verified.Get(tok); ok {
		if v.expires.IsZero() || time.Now().Before(v.expires) {
			return TokenGrant{Prefixes: slices.Clone(v.prefixes), Methods: slices.Clone(v.methods)}, nil
		}
		k.verified.Remove(tok)
	}
	claims := &security.SeaweedFilerClaims{}
	parsed, err := security.DecodeJwt(k.key, security.EncodedJwt(tok), claims)
	if err != nil || !parsed.Valid {
		msg := "invalid"
		if err != nil {
			msg = perr.Truncate(err.Error(), 200)
		}
		return TokenGrant{}, perr.New(perr.PermissionDenied, "bearer token refused: %s", msg)
	}
	if claims.SessionId != "" {
		return TokenGrant{}, perr.New(perr.PermissionDenied, "the bearer token is an S3 session credential, not a service token")
	}
	v := verifiedToken{prefixes: slices.Clone(claims.AllowedPrefixes), methods: slices.Clone(claims.AllowedMethods)}
	if claims.ExpiresAt != nil {
		v.expires = claims.ExpiresAt.Time
	}
	k.verified.Add(tok, v)
	return TokenGrant{Prefixes: claims.AllowedPrefixes, Methods: claims.AllowedMethods}, nil
}

// Derive is a key for one purpose, derived from the service key
// (HMAC-SHA256 of "lakeweed pushdown " + purpose under it): what the
// services authenticate files they write for themselves with (persisted
// delete bitmaps), so the signing key itself signs only tokens. Nil when
// k has no key.
func (k *Keys) Derive(purpose string) []byte {
	if k == nil || len(k.key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, []byte(k.key))
	m.Write([]byte("lakeweed pushdown " + purpose))
	return m.Sum(nil)
}

// BearerToken returns the "authorization: Bearer <token>" of the incoming
// call, or "".
func BearerToken(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return bearerOf(md)
}

// bearerOf returns the bearer token of metadata md, or "".
func bearerOf(md metadata.MD) string {
	for _, v := range md.Get("authorization") {
		if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
			return strings.TrimSpace(v[7:])
		}
	}
	return ""
}

// WithToken returns ctx carrying a service token for prefixes on its
// outgoing calls (ctx unchanged when k has no key), allowing reads only,
// or writes too (the calls that persist beside the data: BuildIndexes,
// ComputeDeletes). No prefixes allow nothing; WithClusterToken allows
// reading every table bucket.
func (k *Keys) WithToken(ctx context.Context, prefixes []string, write bool) (context.Context, error) {
	if len(prefixes) == 0 {
		prefixes = []string{noPath}
	}
	methods := ReadMethods
	if write {
		methods = append(slices.Clone(ReadMethods), WriteMethods...)
	}
	return k.withToken(ctx, prefixes, methods)
}

// WithClusterToken returns ctx carrying an unscoped read-only service
// token (for calls that name no file, such as Status probes).
func (k *Keys) WithClusterToken(ctx context.Context) (context.Context, error) {
	return k.withToken(ctx, nil, ReadMethods)
}

// noPath is a prefix no valid location has (ParseLocation refuses control
// characters).
const noPath = "\x00"

func (k *Keys) withToken(ctx context.Context, prefixes, methods []string) (context.Context, error) {
	tok, err := k.Token(prefixes, methods)
	if err != nil {
		return nil, perr.New(perr.Internal, "sign service token: %v", err)
	}
	if tok == "" {
		return ctx, nil
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok), nil
}

// DirPrefixes returns the distinct parent folders ("/buckets/b/…/") of
// locations, the prefixes a token for calls on them allows.
func DirPrefixes(locs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range locs {
		loc, err := ParseLocation(l)
		if err != nil {
			continue // refused by the callee anyway
		}
		dir := loc.FilerPath[:strings.LastIndexByte(loc.FilerPath, '/')+1]
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	return out
}
