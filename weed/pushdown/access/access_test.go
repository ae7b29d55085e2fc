package access

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

func TestLocationsAreValidatedSegmentBySegmentNotCleaned(t *testing.T) {
	for _, tc := range []struct {
		loc  string
		kind perr.Kind
		want string // filer path when valid
	}{
		{"s3://w/ns/t/data/f.parquet", 0, "/buckets/w/ns/t/data/f.parquet"},
		{"/buckets/w/ns/t/data/f.parquet", 0, "/buckets/w/ns/t/data/f.parquet"},
		{"/buckets/w/ns/../../etc/x", perr.InvalidArgument, ""},
		{"/buckets/w/ns/./x", perr.InvalidArgument, ""},
		{"/buckets//etc/x", perr.InvalidArgument, ""},
		{"/buckets/w/ns/t/data/..", perr.InvalidArgument, ""},
		{"s3://w/a/../../b", perr.InvalidArgument, ""},
		{"/etc/iam/identities/x.json", perr.PermissionDenied, ""},
		{"/buckets/w", perr.InvalidArgument, ""},
		{"s3://w/a\x00b", perr.InvalidArgument, ""},
		{"gs://w/a", perr.InvalidArgument, ""},
		{"", perr.InvalidArgument, ""},
		{"s3://w/" + strings.Repeat("a", MaxPathBytes), perr.InvalidArgument, ""},
		{"s3://w/" + strings.Repeat("a", MaxSegmentBytes+1) + "/x", perr.InvalidArgument, ""},
	} {
		l, err := ParseLocation(tc.loc)
		if tc.want != "" {
			if err != nil || l.FilerPath != tc.want || l.Bucket != "w" {
				t.Fatalf("ParseLocation(%.40q) = %+v, %v; want %s", tc.loc, l, err, tc.want)
			}
			continue
		}
		if err == nil || perr.KindOf(err) != tc.kind || len(err.Error()) > 300 {
			t.Fatalf("ParseLocation(%.40q): %v; want %s in at most 300 bytes", tc.loc, err, tc.kind)
		}
	}
}

func TestServiceTokensAllowOnlyTheirPrefixesAndAnEmptyScopeAllowsNothing(t *testing.T) {
	k := NewKeys([]byte("0123456789abcdef0123456789abcdef"))
	in := func(ctx context.Context) context.Context {
		md, _ := metadata.FromOutgoingContext(ctx)
		return metadata.NewIncomingContext(context.Background(), md)
	}
	g := &Guard{Keys: k}
	scoped, err := k.WithToken(context.Background(), DirPrefixes([]string{"s3://w/ns/t/data/a.parquet", "s3://w/ns/t/data/b.parquet"}), false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Authenticate(in(scoped), "ReadRanges", nil)
	if err != nil || c.Kind != Service {
		t.Fatalf("a valid token: %v %+v", err, c)
	}
	for loc, want := range map[string]bool{"s3://w/ns/t/data/c.parquet": true, "s3://w/ns/t/data/.index/a.parquet/x": true, "s3://w/ns/t/database/x": false, "s3://w/ns/u/data/a.parquet": false} {
		l, _ := ParseLocation(loc)
		if c.Allows(l) != want {
			t.Fatalf("token for /buckets/w/ns/t/data/ allows %s = %v", loc, !want)
		}
	}
	none, _ := k.WithToken(context.Background(), nil, false)
	c, _ = g.Authenticate(in(none), "ReadRanges", nil)
	if l, _ := ParseLocation("s3://w/x/y"); c.Allows(l) {
		t.Fatalf("a token minted for no files allows every file")
	}
	other, _ := NewKeys([]byte("another key another key another k")).WithClusterToken(context.Background())
	if _, err := g.Authenticate(in(other), "ReadRanges", nil); perr.KindOf(err) != perr.PermissionDenied {
		t.Fatalf("a token signed with another key: %v", err)
	}
	if _, err := (&Guard{}).Authenticate(context.Background(), "ReadRanges", nil); perr.KindOf(err) != perr.PermissionDenied {
		t.Fatalf("no proof and no way to check S3 identities: %v", err)
	}
}

func TestASignedPayloadHashMustBeTheBodysInHexOrBase64(t *testing.T) {
	body := []byte(`{"filter": true}`)
	sum := sha256.Sum256(body)
	other := sha256.Sum256([]byte(`{}`))
	for _, c := range []struct {
		claimed string
		ok      bool
	}{
		{"", true},
		{"UNSIGNED-PAYLOAD", true},
		{hex.EncodeToString(sum[:]), true},
		{base64.StdEncoding.EncodeToString(sum[:]), true}, // Iceberg Java's form
		{hex.EncodeToString(other[:]), false},
		{base64.StdEncoding.EncodeToString(other[:]), false},
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", false},
		{"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", false}, // the empty body's
	} {
		if got := payloadMatches(c.claimed, body); got != c.ok {
			t.Errorf("payloadMatches(%q) = %v, want %v", c.claimed, got, c.ok)
		}
	}
}

func TestTheScopeOfASigV4AuthorizationNamesKeyRegionAndService(t *testing.T) {
	k, r, s := scopeOf("AWS4-HMAC-SHA256 Credential=AKID/20261204/eu-west-1/s3tables/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc")
	if k != "AKID" || r != "eu-west-1" || s != "s3tables" {
		t.Fatalf("scopeOf: %q %q %q", k, r, s)
	}
	if k, r, s = scopeOf("AWS4-HMAC-SHA256 Credential=broken"); k != "" || r != "us-east-1" || s != "s3" {
		t.Fatalf("scopeOf of a malformed credential: %q %q %q", k, r, s)
	}
}
