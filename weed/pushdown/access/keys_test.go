package access

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/security"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A service token verified once is accepted again from memory with the
// same prefixes until it expires, and refused once it has, though it was
// remembered; a token signed with another key, or altered, is refused
// however often it is sent; a caller changing the prefixes it got does not
// change what the token allows.
func TestAVerifiedTokenIsRememberedUntilItExpiresAndNoLonger(t *testing.T) {
	k := NewKeys([]byte(strings.Repeat("k", 32)))
	sign := func(key string, ttl time.Duration) string {
		claims := security.SeaweedFilerClaims{AllowedPrefixes: []string{"/buckets/a/"},
			RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(ttl))}}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	short := sign(strings.Repeat("k", 32), 1500*time.Millisecond)
	for i := 0; i < 3; i++ {
		got, err := k.Verify(short)
		if err != nil || len(got.Prefixes) != 1 || got.Prefixes[0] != "/buckets/a/" {
			t.Fatalf("call %d: %v, %v; want the token's one prefix", i+1, got, err)
		}
		got.Prefixes[0] = "/" // the caller's copy
	}
	if k.verified.Len() != 1 {
		t.Fatalf("%d tokens remembered, want 1", k.verified.Len())
	}
	other := sign(strings.Repeat("o", 32), time.Minute)
	altered := short[:len(short)-2] + "xx"
	for i := 0; i < 2; i++ {
		if _, err := k.Verify(other); err == nil {
			t.Fatalf("call %d: a token signed with another key was accepted", i+1)
		}
		if _, err := k.Verify(altered); err == nil {
			t.Fatalf("call %d: an altered token was accepted", i+1)
		}
	}
	time.Sleep(1600 * time.Millisecond)
	if got, err := k.Verify(short); err == nil {
		t.Fatalf("an expired token was accepted from memory: %v", got)
	}
}

// A filer that refuses connections while it starts is asked again until
// it answers; any other error, or one lasting past the deadline, is
// returned naming the service key.
func TestTheServiceKeyIsLoadedOnceAStartingFilerAnswers(t *testing.T) {
	calls := 0
	unavailable := func(fn func(filer_pb.SeaweedFilerClient) error) error {
		calls++
		return fmt.Errorf("LookupEntry1: %w", status.Error(codes.Unavailable, "connection reset by peer"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := LoadKeys(ctx, "", unavailable); err == nil || !strings.Contains(err.Error(), "pushdown service key") || calls < 2 {
		t.Fatalf("a filer unavailable throughout: %v after %d calls; want an error naming the service key after retries", err, calls)
	}
	calls = 0
	denied := func(fn func(filer_pb.SeaweedFilerClient) error) error {
		calls++
		return status.Error(codes.PermissionDenied, "no")
	}
	if _, err := LoadKeys(context.Background(), "", denied); err == nil || calls != 1 {
		t.Fatalf("a refusal: %v after %d calls; want the error at once", err, calls)
	}
}
