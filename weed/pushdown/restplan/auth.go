package restplan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// Authorization is LoadTable's, exactly: every planning request first asks
// upstream's catalog for the table with the caller's own credentials
//
//	GET {upstream}/v1/[{prefix}/]namespaces/{ns}/tables/{t}?snapshots=refs
//	    Authorization: <the caller's>
//
// and relays any answer but 200 as it came (status, error body, the
// WWW-Authenticate a client refreshes its token on), so a caller who may not
// load a table learns from the planning endpoints exactly what LoadTable
// would tell it, whether the table exists or not. A 200 names the table's
// bucket (its metadata location) and properties.
//
// An AWS-signed request (SigV4) cannot be replayed: its signature is
// verified here against the cluster's S3 identities, and LoadTable is asked
// with a request signed as that identity (identify, below).
//
// A 200 is remembered for Config.AuthTTL (2 s by default) under a digest of
// exactly what the probe sent — the caller's Authorization header, Host,
// prefix, namespace, table and warehouse — so the plan request and the
// plan-task fetches of one scan ask upstream once, not once each:
//
//	request ─▶ digest(credential, host, route) ─▶ cached 200, not expired? ─▶ authorized
//	                                               (plans: and the table's metadata
//	                                                location still the one LoadTable named)
//	                                            └▶ otherwise LoadTable, as above
//
// Only 200s are kept, never refusals, and never past the TTL or a bearer
// JWT's own exp: a caller whose access is revoked loses it within AuthTTL
// (0 turns the cache off); any other credential, host or table is another
// digest and asks upstream. A plan request whose table's metadata location
// moved since (a commit, a drop and re-create) asks again.

// tableRef is an authorized table.
type tableRef struct {
	name  tables.Name
	key   string // bucket, namespace and table: what plans are bound to
	props map[string]string
	// location is the metadata location LoadTable named; cached is set on
	// an answer from the authorization cache.
	location string
	cached   bool
	// caller is who the request's plans belong to (callerKey).
	caller string
}

// authCache remembers LoadTable's 200s for a short time (see above).
type authCache struct {
	ttl     time.Duration
	entries *lru.Cache[authKey, authEntry]
	now     func() time.Time
}

type authKey [sha256.Size]byte

type authEntry struct {
	ref     tableRef
	expires time.Time
}

// maxAuthEntries bounds the authorization cache.
const maxAuthEntries = 4096

func newAuthCache(ttl time.Duration) *authCache {
	if ttl <= 0 {
		return nil
	}
	entries, _ := lru.New[authKey, authEntry](maxAuthEntries)
	return &authCache{ttl: ttl, entries: entries, now: time.Now}
}

// keyOf digests everything the LoadTable probe of r sends (cred: the
// caller's credential, see caller).
func keyOf(cred string, r *http.Request, rt route) authKey {
	h := sha256.New()
	for _, s := range []string{cred, r.Host, rt.prefix, rt.rawNS, rt.rawTable, r.URL.Query().Get("warehouse")} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k authKey
	h.Sum(k[:0])
	return k
}

func (c *authCache) get(k authKey) (*tableRef, bool) {
	if c == nil {
		return nil, false
	}
	e, ok := c.entries.Get(k)
	if !ok {
		return nil, false
	}
	if !c.now().Before(e.expires) {
		c.entries.Remove(k)
		return nil, false
	}
	ref := e.ref
	ref.cached = true
	return &ref, true
}

// put remembers an authorized ref until the TTL or the bearer token's exp,
// whichever is first.
func (c *authCache) put(k authKey, auth string, ref *tableRef) {
	if c == nil {
		return
	}
	now := c.now()
	expires := now.Add(c.ttl)
	if exp, ok := tokenExpiry(auth); ok && exp.Before(expires) {
		expires = exp
	}
	if !now.Before(expires) {
		return
	}
	c.entries.Add(k, authEntry{ref: *ref, expires: expires})
}

func (c *authCache) forget(k authKey) {
	if c != nil {
		c.entries.Remove(k)
	}
}

// tokenExpiry reads the exp claim of a bearer JWT (unverified: it can only
// shorten how long an authorization is remembered).
func tokenExpiry(auth string) (time.Time, bool) {
	if len(auth) <= 7 || !strings.EqualFold(auth[:7], "bearer ") {
		return time.Time{}, false
	}
	parts := strings.Split(strings.TrimSpace(auth[7:]), ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &c) != nil || c.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(int64(*c.Exp), 0), true
}

// probeFailure is upstream's refusal, relayed verbatim.
type probeFailure struct {
	status int
	header http.Header
	body   []byte
}

func (p *probeFailure) write(w http.ResponseWriter) {
	for _, k := range []string{"Content-Type", "WWW-Authenticate", "Retry-After"} {
		if v := p.header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(p.body)
}

// maxProbeError bounds a relayed refusal body.
const maxProbeError = 64 << 10

// caller is who a planning request comes from.
type caller struct {
	// cred keys the authorization cache: the Authorization header, or for
	// an AWS-signed request the access key whose signature was verified
	// (each request's signature differs).
	cred string
	// owner is who the caller's plans belong to (see callerKey).
	owner string
	// signed signs the LoadTable probe as the caller (AWS-signed requests);
	// nil: the probe carries the caller's own Authorization.
	signed *access.HTTPCaller
}

// SigV4Verifier checks AWS-signed requests against the cluster's S3
// identities (access.IAM).
type SigV4Verifier interface {
	VerifyHTTP(r *http.Request, body []byte) (*access.HTTPCaller, error)
}

// SetSigV4Verifier attaches the S3 identity check for AWS-signed planning
// requests; until then they are answered 503.
func (f *Front) SetSigV4Verifier(v SigV4Verifier) { f.sigv4.Store(&verifierBox{v: v}) }

type verifierBox struct{ v SigV4Verifier }

// identify establishes the caller of r. An AWS-signed request (Iceberg Java
// and PyIceberg with rest.sigv4-enabled) signs its method, path, headers
// and body: it cannot be replayed as a LoadTable, so its signature is
// verified here, against the identities upstream's catalog uses, refused as
// upstream's catalog refuses a bad one (status, ForbiddenException /
// NotAuthorizedException, upstream's description), and LoadTable is then
// asked with a request signed as that identity. Its body is read (bounded)
// to check the signature and left in r.Body for the handler.
func (f *Front) identify(r *http.Request) (*caller, *probeFailure) {
	auth := r.Header.Get("Authorization")
	if !access.IsSigV4(auth) {
		return &caller{cred: auth, owner: callerKey(r)}, nil
	}
	box := f.sigv4.Load()
	if box == nil {
		return nil, failure(http.StatusServiceUnavailable, "ServiceUnavailableException", "AWS-signed scan planning starts with the catalog pushdown service; retry shortly")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, f.cfg.MaxRequestBytes+1))
	if err != nil {
		return nil, failure(http.StatusBadRequest, "BadRequestException", "read request body: "+perr.Truncate(err.Error(), 200))
	}
	if int64(len(body)) > f.cfg.MaxRequestBytes {
		return nil, failure(http.StatusBadRequest, "BadRequestException", "request body is over "+strconv.FormatInt(f.cfg.MaxRequestBytes, 10)+" bytes")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	signed, err := box.v.VerifyHTTP(r, body)
	if err != nil {
		var se *access.SignatureError
		if !errors.As(err, &se) {
			return nil, failure(http.StatusForbidden, "ForbiddenException", perr.Truncate(err.Error(), 200))
		}
		return nil, failure(se.HTTPStatus(), restErrorType(se.HTTPStatus()), se.Description())
	}
	return &caller{cred: "aws-signed\x00" + signed.AccessKey, owner: "key:" + signed.AccessKey, signed: signed}, nil
}

// restErrorType is the REST error type upstream's catalog gives a refused
// signature's status.
func restErrorType(status int) string {
	switch status {
	case http.StatusForbidden:
		return "ForbiddenException"
	case http.StatusUnauthorized:
		return "NotAuthorizedException"
	case http.StatusBadRequest:
		return "BadRequestException"
	case http.StatusInternalServerError:
		return "InternalServerError"
	}
	return "RESTException"
}

// authorize answers whether the caller of r may load rt's table, from the
// authorization cache or by asking upstream's LoadTable.
func (f *Front) authorize(ctx context.Context, r *http.Request, rt route) (*tableRef, *probeFailure) {
	return f.authorizeFor(ctx, r, rt, nil)
}

// authorizeCurrent is authorize for a request that plans: a remembered
// authorization holds only while the table's metadata location is still
// the one LoadTable named (else upstream is asked again).
func (f *Front) authorizeCurrent(ctx context.Context, r *http.Request, rt route, planner ScanPlanner) (*tableRef, *probeFailure) {
	return f.authorizeFor(ctx, r, rt, planner)
}

// authorizeFor is authorize; with a planner, a remembered authorization
// holds only while the planner names the same metadata location.
func (f *Front) authorizeFor(ctx context.Context, r *http.Request, rt route, planner ScanPlanner) (*tableRef, *probeFailure) {
	c, fail := f.identify(r)
	if fail != nil {
		return nil, fail
	}
	k := keyOf(c.cred, r, rt)
	if ref, ok := f.auth.get(k); ok {
		if planner == nil {
			ref.caller = c.owner
			return ref, nil
		}
		if loc, ok := planner.(Locator); ok {
			if cur, err := loc.MetadataLocation(ctx, ref.name); err == nil && cur == ref.location {
				ref.caller = c.owner
				return ref, nil
			}
		}
		f.auth.forget(k)
	}
	ref, fail := f.probeLoadTable(ctx, r, rt, c)
	if fail != nil {
		return nil, fail
	}
	f.auth.put(k, c.cred, ref)
	ref.caller = c.owner
	return ref, nil
}

// Locator names a table's current metadata location (catalog.Service).
type Locator interface {
	MetadataLocation(ctx context.Context, name tables.Name) (string, error)
}

// probeLoadTable asks upstream's LoadTable with the caller's credentials.
func (f *Front) probeLoadTable(ctx context.Context, r *http.Request, rt route, c *caller) (*tableRef, *probeFailure) {
	p := "/v1/"
	if rt.prefix != "" {
		p += rt.prefix + "/"
	}
	p += "namespaces/" + rt.rawNS + "/tables/" + rt.rawTable
	q := url.Values{}
	if wh := r.URL.Query().Get("warehouse"); wh != "" {
		q.Set("warehouse", wh)
	}
	q.Set("snapshots", "refs")
	u := *f.upstream
	u.RawPath = p
	u.Path, _ = url.PathUnescape(p)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, failure(http.StatusBadRequest, "BadRequestException", "malformed table path")
	}
	req.Host = r.Host
	if c.signed != nil {
		if err := c.signed.Sign(ctx, req); err != nil {
			return nil, failure(http.StatusInternalServerError, "InternalServerError", "sign LoadTable as the caller: "+perr.Truncate(err.Error(), 200))
		}
	} else if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	resp, err := f.probe.Do(req)
	if err != nil {
		return nil, failure(http.StatusServiceUnavailable, "ServiceUnavailableException", "the Iceberg REST catalog is not reachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeError))
		return nil, &probeFailure{status: resp.StatusCode, header: resp.Header, body: body}
	}
	var res struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			Location   string            `json:"location"`
			Properties map[string]string `json:"properties"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, failure(http.StatusInternalServerError, "InternalServerError", "the Iceberg REST catalog's LoadTable answer does not decode")
	}
	loc := res.MetadataLocation
	if loc == "" {
		loc = res.Metadata.Location
	}
	bucket := bucketOf(loc)
	if bucket == "" {
		return nil, failure(http.StatusInternalServerError, "InternalServerError", "the table has no s3:// location")
	}
	name, err := tables.ParseName(bucket, strings.Join(rt.namespace, ".")+"."+rt.table, bucket)
	if err != nil {
		return nil, failure(http.StatusBadRequest, "BadRequestException", err.Error())
	}
	return &tableRef{name: name, key: bucket + "\x00" + name.Namespace + "\x00" + name.Table, props: res.Metadata.Properties, location: loc}, nil
}

func bucketOf(loc string) string {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		if rest, ok = strings.CutPrefix(loc, "s3a://"); !ok {
			return ""
		}
	}
	b, _, _ := strings.Cut(rest, "/")
	return b
}

// callerKey names who a plan belongs to. It is used only after upstream
// accepted the request's credentials: for an AWS-signed request, the access
// key whose signature was verified (identify); for a token of upstream's OAuth2
// endpoint, the access key it was minted from (so a refreshed token keeps
// its plans); for any other token, its hash; without one, "anonymous".
func callerKey(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "anonymous"
	}
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		tok := strings.TrimSpace(a[7:])
		if parts := strings.Split(tok, "."); len(parts) == 3 {
			if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
				var c struct {
					AccessKey string `json:"access_key"`
				}
				if json.Unmarshal(payload, &c) == nil && c.AccessKey != "" {
					return "key:" + c.AccessKey
				}
			}
		}
	}
	sum := sha256.Sum256([]byte(a))
	return "auth:" + hex.EncodeToString(sum[:16])
}
