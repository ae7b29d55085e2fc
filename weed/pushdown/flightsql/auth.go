package flightsql

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
)

// authenticate finds the caller of a call from its "authorization"
// metadata: Basic (S3 access key and secret), Bearer (a token a Handshake
// returned), or nothing (the anonymous identity, where the cluster's S3
// gateway serves one).
func (s *Server) authenticate(ctx context.Context) (*session, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var auth string
	if v := md.Get("authorization"); len(v) > 0 {
		auth = strings.TrimSpace(v[0])
	}
	scheme, cred, _ := strings.Cut(auth, " ")
	cred = strings.TrimSpace(cred)
	switch {
	case strings.EqualFold(scheme, "bearer") && cred != "":
		ses, ok := s.sessions.Get(cred)
		if !ok || time.Now().After(ses.expires) {
			return nil, status.Error(codes.Unauthenticated, "the bearer token is unknown or expired: authenticate again with basic credentials (an S3 access key and secret)")
		}
		return ses, nil
	case strings.EqualFold(scheme, "basic") && cred != "":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			if raw, err = base64.RawStdEncoding.DecodeString(cred); err != nil {
				return nil, status.Error(codes.Unauthenticated, "basic credentials are not base64")
			}
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" {
			return nil, status.Error(codes.Unauthenticated, "basic credentials must be <S3 access key>:<secret key>")
		}
		return s.keysSession(ctx, user, pass)
	case auth != "":
		return nil, status.Error(codes.Unauthenticated, "authorization must be Basic (an S3 access key and secret) or Bearer (a token from a handshake)")
	}
	ses, err := s.keysSession(ctx, "", "")
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, "no credentials: this cluster has S3 identities; authenticate with basic credentials (an S3 access key and secret)")
	}
	return ses, nil
}

// keysSession authenticates S3 keys with the gateway's IAM.
func (s *Server) keysSession(ctx context.Context, accessKey, secretKey string) (*session, error) {
	caller, err := s.cfg.Guard.AuthenticateKeys(ctx, method, accessKey, secretKey)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, "the S3 access key and secret were not accepted")
	}
	sum := sha256.Sum256([]byte(accessKey + "\x00" + secretKey))
	return &session{caller: caller, accessKey: accessKey, secretKey: secretKey, id: hex.EncodeToString(sum[:16]),
		expires: time.Now().Add(s.cfg.SessionTTL)}, nil
}

// issue returns a bearer token for ses (a Handshake's answer). One
// identity (a pair of S3 keys, or the anonymous caller) holds at most
// maxTokensPerIdentity tokens, its oldest forgotten past that: handshakes
// in a loop cannot push every other caller's token out of the
// maxSessions kept.
func (s *Server) issue(ses *session) string {
	tok := newToken()
	s.tokMu.Lock()
	toks := append(s.tokens[ses.id], tok)
	var drop []string
	if n := len(toks) - maxTokensPerIdentity; n > 0 {
		drop = slices.Clone(toks[:n])
		toks = slices.Clone(toks[n:])
	}
	s.tokens[ses.id] = toks
	s.tokMu.Unlock()
	for _, d := range drop {
		s.sessions.Remove(d) // forgetToken finds it gone from the list
	}
	s.sessions.Add(tok, ses)
	return tok
}

// forgetToken drops a token the sessions cache let go (evicted or
// removed) from its identity's list.
func (s *Server) forgetToken(tok string, ses *session) {
	s.tokMu.Lock()
	defer s.tokMu.Unlock()
	toks := s.tokens[ses.id]
	if i := slices.Index(toks, tok); i >= 0 {
		toks = slices.Delete(toks, i, i+1)
	}
	if len(toks) == 0 {
		delete(s.tokens, ses.id)
		return
	}
	s.tokens[ses.id] = toks
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ses, err := s.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return grpcutil.UnaryErrorInterceptor(context.WithValue(ctx, sessionKey{}, ses), req, info, handler)
}

func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			glog.Errorf("flight sql: panic in %s: %v", info.FullMethod, r)
			err = status.Errorf(codes.Internal, "internal error in %s", info.FullMethod)
		}
	}()
	ses, err := s.authenticate(ss.Context())
	if err != nil {
		return err
	}
	if strings.HasSuffix(info.FullMethod, "/Handshake") {
		md := metadata.Pairs("authorization", "Bearer "+s.issue(ses))
		_ = ss.SetHeader(md)
		ss.SetTrailer(md)
	}
	return handler(srv, &wrappedStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), sessionKey{}, ses)})
}

// Serving is a running Flight SQL endpoint.
type Serving struct {
	Addr   string
	server *grpc.Server
	done   chan struct{}
}

// Serve listens on addr (host:port; port 0 picks one) and serves s with
// the extra server options (TLS).
func (s *Server) Serve(addr string, opts ...grpc.ServerOption) (*Serving, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("flight sql: listen on %s: %w (set -pushdown.flightsql.port)", addr, err)
	}
	// Static receive windows, as the pushdown services have: an unread
	// request costs at most 1 MiB a stream and 4 MiB a connection. No
	// budget of requests in flight: here a call is authenticated only by
	// its interceptor, after a budget would have been reserved, and Flight
	// SQL calls have no deadline, so streams opened and never sent on by a
	// caller nobody knows would hold the budget and stall every caller.
	adm := &grpcutil.Admission{Service: "Flight SQL", MaxRequest: maxRequestBytes}
	opts = append(append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
		grpc.MaxRecvMsgSize(maxRequestBytes),
	}, adm.Options()...), opts...)
	g := grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(g, afsql.NewFlightServer(s))
	sv := &Serving{Addr: ln.Addr().String(), server: g, done: make(chan struct{})}
	go func() {
		defer close(sv.done)
		if err := g.Serve(ln); err != nil {
			glog.Errorf("flight sql: %v", err)
		}
	}()
	return sv, nil
}

// Stop ends the endpoint: calls in flight get timeout to finish.
func (sv *Serving) Stop(timeout time.Duration) {
	grpcutil.GracefulStop(sv.server, timeout)
	<-sv.done
}
