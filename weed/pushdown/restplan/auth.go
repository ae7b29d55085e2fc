package restplan

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

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

// tableRef is an authorized table.
type tableRef struct {
	name  tables.Name
	key   string // bucket, namespace and table: what plans are bound to
	props map[string]string
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

func (f *Front) authorize(ctx context.Context, r *http.Request, rt route) (*tableRef, *probeFailure) {
	if isSigV4(r.Header.Get("Authorization")) {
		// A SigV4 signature covers the method, path and body it was made for:
		// it cannot be replayed as a LoadTable.
		return nil, failure(http.StatusForbidden, "ForbiddenException",
			"scan planning requests signed with AWS SigV4 are not supported; authenticate with an OAuth2 credential or bearer token")
	}
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
	if a := r.Header.Get("Authorization"); a != "" {
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
	return &tableRef{name: name, key: bucket + "\x00" + name.Namespace + "\x00" + name.Table, props: res.Metadata.Properties}, nil
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

func isSigV4(auth string) bool {
	return strings.HasPrefix(auth, "AWS4-") || strings.HasPrefix(auth, "AWS ")
}

// callerKey names who a plan belongs to. It is computed only after upstream
// accepted the request's credentials: for a token of upstream's OAuth2
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
