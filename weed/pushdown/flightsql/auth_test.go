package flightsql

import (
	"context"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func bearer(tok string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+tok))
}

// Handshakes in a loop keep only the identity's newest tokens: its oldest
// are forgotten, another identity's token stays, and the lists shrink with
// the cache.
func TestAnIdentitysHandshakesKeepItsNewestTokensAndNoOneElses(t *testing.T) {
	s := &Server{tokens: map[string][]string{}}
	s.sessions, _ = lru.NewWithEvict[string, *session](maxSessions, s.forgetToken)
	other := s.issue(&session{id: "b", expires: time.Now().Add(time.Hour)})
	var toks []string
	for i := 0; i < maxTokensPerIdentity+10; i++ {
		toks = append(toks, s.issue(&session{id: "a", expires: time.Now().Add(time.Hour)}))
	}
	for i, tok := range toks {
		_, err := s.authenticate(bearer(tok))
		if i < 10 && status.Code(err) != codes.Unauthenticated {
			t.Fatalf("token %d of %d: %v, want forgotten", i+1, len(toks), err)
		}
		if i >= 10 && err != nil {
			t.Fatalf("token %d of %d: %v, want kept", i+1, len(toks), err)
		}
	}
	if ses, err := s.authenticate(bearer(other)); err != nil || ses.id != "b" {
		t.Fatalf("another identity's token: %v", err)
	}
	if n := len(s.tokens["a"]); n != maxTokensPerIdentity || s.sessions.Len() != maxTokensPerIdentity+1 {
		t.Fatalf("identity a lists %d tokens, the cache holds %d", n, s.sessions.Len())
	}
	s.sessions.Remove(other)
	if _, ok := s.tokens["b"]; ok {
		t.Fatal("a token the cache let go is still listed")
	}
}
