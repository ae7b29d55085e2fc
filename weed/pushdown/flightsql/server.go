// Package flightsql serves Arrow Flight SQL from the catalog process with
// arrow-go's flight/flightsql server: statements and prepared statements
// (with parameters) run through the one SQL front end (sqlexec) over the
// connector, so a Flight SQL query gets the same pushdown as `weed
// pushdown query` (plans, pages, volume reads, ReadRows, vector search,
// COUNT(*) from the plan).
//
//	client ─▶ auth interceptor: Basic <S3 access key:secret> (Handshake or any call)
//	   │                        Bearer <session token from the Handshake>
//	   │                        nothing: only on a cluster without S3 identities
//	   ▼ caller = an S3 identity (the S3 gateway's own IAM code)
//	GetFlightInfo(statement) ─▶ parse, answer schema from the table schema ─▶ ticket (the SQL)
//	DoGet(ticket) ─▶ sqlexec.Run with a connector holding the caller's keys ─▶ records
//	   streamed one at a time (an unbuffered channel: backpressure), cancellable
//	metadata: catalogs (the warehouse), schemas (namespaces), tables the caller may read
package flightsql

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlexec"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
	"github.com/lakeweed/seaweedfs/weed/pushdown/version"
)

// Config configures a Flight SQL server.
type Config struct {
	// Endpoints of the cluster the queries read (catalog pushdown service,
	// Iceberg REST, S3 gateway, warehouse); the credentials are each
	// caller's own.
	Endpoints lakeclient.Endpoints
	// Guard authenticates callers' S3 keys.
	Guard *access.Guard
	// Connector options for every caller's connector (endpoints and keys
	// are set per caller).
	Connector connector.Options
	// SessionTTL is how long a bearer token from a Handshake stays valid.
	SessionTTL time.Duration
	// MaxQueries bounds the reads running at once (default 4 a core, at
	// least 8); a query past it waits for one to end (or its deadline).
	MaxQueries int
}

// Limits of what the server keeps per caller.
const (
	maxSessions           = 100_000
	maxTokensPerIdentity  = 64
	maxRequestBytes       = 16 << 20
	maxConnectors         = 256
	defaultSessionTTL     = 12 * time.Hour
	connectorCloseDelay   = 10 * time.Minute
	method                = "FlightSQL"
	catalogTableType      = "TABLE"
	maxParameterRows      = 1
	maxListedTables       = 100_000
	maxStatementHandleLen = 64
)

// Server is the Flight SQL service.
type Server struct {
	afsql.BaseServer
	cfg        Config
	sessions   *lru.Cache[string, *session]
	tokMu      sync.Mutex
	tokens     map[string][]string // session id → its bearer tokens, oldest first
	connectors *lru.Cache[string, *connector.Connector]
	*statements
	mu      sync.Mutex
	running map[string]context.CancelFunc // ticket → its DoGet's cancel
	connMu  sync.Mutex
	slots   chan struct{} // one per running read
}

// session is an authenticated caller.
type session struct {
	caller    *access.Caller
	accessKey string
	secretKey string
	expires   time.Time
	id        string // token, or the keys' digest for per-call Basic auth
}

// New returns a Flight SQL server.
func New(cfg Config) (*Server, error) {
	if cfg.Guard == nil {
		return nil, fmt.Errorf("flight sql: no guard to authenticate callers")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = defaultSessionTTL
	}
	if cfg.MaxQueries <= 0 {
		cfg.MaxQueries = max(8, 4*runtime.GOMAXPROCS(0))
	}
	// Each caller's connector holds its read-ahead and range cache: the
	// CLI's defaults, not the library's larger ones.
	if cfg.Connector.MaxBufferBytes == 0 {
		cfg.Connector.MaxBufferBytes = 64 << 20
	}
	if cfg.Connector.RangeCacheBytes == 0 {
		cfg.Connector.RangeCacheBytes = 16 << 20
	}
	s := &Server{cfg: cfg, running: map[string]context.CancelFunc{}, slots: make(chan struct{}, cfg.MaxQueries)}
	s.Alloc = memory.DefaultAllocator
	s.tokens = map[string][]string{}
	s.sessions, _ = lru.NewWithEvict[string, *session](maxSessions, s.forgetToken)
	s.statements = newStatements()
	s.connectors, _ = lru.NewWithEvict[string, *connector.Connector](maxConnectors, func(_ string, c *connector.Connector) {
		time.AfterFunc(connectorCloseDelay, c.Close) // queries running on it finish first
	})
	for id, v := range map[afsql.SqlInfo]any{
		afsql.SqlInfoFlightSqlServerName:         "lakeweed",
		afsql.SqlInfoFlightSqlServerVersion:      version.String(),
		afsql.SqlInfoFlightSqlServerArrowVersion: "18.8.0",
		afsql.SqlInfoFlightSqlServerReadOnly:     true,
		afsql.SqlInfoFlightSqlServerSql:          true,
		afsql.SqlInfoFlightSqlServerSubstrait:    false,
		afsql.SqlInfoFlightSqlServerTransaction:  int32(0), // none
		afsql.SqlInfoFlightSqlServerCancel:       true,
		afsql.SqlInfoIdentifierQuoteChar:         `"`,
		afsql.SqlInfoDDLCatalog:                  false,
		afsql.SqlInfoDDLSchema:                   false,
		afsql.SqlInfoDDLTable:                    false,
	} {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return nil, fmt.Errorf("flight sql: sql info %d: %w", id, err)
		}
	}
	return s, nil
}

type sessionKey struct{}

// callerOf is the session the auth interceptor put in ctx.
func callerOf(ctx context.Context) (*session, error) {
	s, ok := ctx.Value(sessionKey{}).(*session)
	if !ok || s == nil {
		return nil, status.Error(codes.Unauthenticated, "no credentials: send basic credentials (an S3 access key and secret) or a bearer token from a handshake")
	}
	return s, nil
}

// connectorFor is the connector that reads with the session's keys.
func (s *Server) connectorFor(ctx context.Context, ses *session) (*connector.Connector, error) {
	sum := sha256.Sum256([]byte(ses.accessKey + "\x00" + ses.secretKey))
	key := hex.EncodeToString(sum[:])
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if c, ok := s.connectors.Get(key); ok {
		return c, nil
	}
	o := s.cfg.Connector
	o.Endpoints = s.cfg.Endpoints
	o.Endpoints.AccessKey, o.Endpoints.SecretKey, o.Endpoints.SessionToken = ses.accessKey, ses.secretKey, ""
	if o.Endpoints.AccessKey == "" {
		// the anonymous caller of an open cluster: never the server's own keys
		o.Endpoints.AccessKey, o.Endpoints.SecretKey = "anonymous", "anonymous"
	}
	c, err := connector.New(ctx, o)
	if err != nil {
		return nil, perr.New(perr.Unavailable, "connect to the cluster: %v", err)
	}
	s.connectors.Add(key, c)
	return c, nil
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) flightInfo(desc *flight.FlightDescriptor, ticket []byte, sch *arrow.Schema) *flight.FlightInfo {
	info := &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	if sch != nil {
		info.Schema = flight.SerializeSchema(sch, s.Alloc)
	}
	return info
}

// GetFlightInfoStatement parses the query and says its answer's schema;
// the ticket is the query, run by DoGet with the caller's identity.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd afsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.statement(ctx, cmd.GetQuery())
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	if st.Params > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "the statement has %d parameters: prepare it and bind them", st.Params)
	}
	conn, err := s.connectorFor(ctx, ses)
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	sch, err := sqlexec.Schema(ctx, conn, st, sqlexec.Options{})
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	tkt, err := afsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	return s.flightInfo(desc, tkt, sch), nil
}

// GetSchemaStatement says a query's answer schema.
func (s *Server) GetSchemaStatement(ctx context.Context, cmd afsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return schemaOf(s.GetFlightInfoStatement(ctx, cmd, desc))
}

// DoGetStatement runs the ticket's query.
func (s *Server) DoGetStatement(ctx context.Context, cmd afsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	sql := string(cmd.GetStatementHandle())
	st, err := s.statement(ctx, sql)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	return s.run(ctx, ses, "statement:"+sql, st)
}

// run answers st for ses, streaming its records.
func (s *Server) run(ctx context.Context, ses *session, ticket string, st *sqlstmt.Statement) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	conn, err := s.connectorFor(ctx, ses)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	o := sqlexec.Options{}
	sch, err := sqlexec.Schema(ctx, conn, st, o)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, grpcutil.ToStatus(ctx.Err())
	}
	ctx, cancel := context.WithCancel(ctx)
	key := ses.id + "\x00" + ticket
	s.mu.Lock()
	s.running[key] = cancel
	s.mu.Unlock()
	// The stream's schema is its first record's (the file's own types: a
	// vector column is a fixed-size list there), else the announced one;
	// an error before the first record is the call's error.
	type start struct {
		schema *arrow.Schema
		err    error
	}
	started := make(chan start, 1)
	ch := make(chan flight.StreamChunk) // unbuffered: the read waits for the client
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.running, key)
			s.mu.Unlock()
			cancel()
			close(ch)
			<-s.slots
		}()
		var streamSchema *arrow.Schema
		res, err := sqlexec.Run(ctx, conn, st, o, func(rec arrow.RecordBatch) error {
			if streamSchema == nil {
				streamSchema = renamed(rec.Schema(), sch)
				started <- start{schema: streamSchema}
			}
			out, err := sqlexec.Conform(ctx, rec, streamSchema)
			if err != nil {
				return err
			}
			select {
			case ch <- flight.StreamChunk{Data: out}:
				return nil
			case <-ctx.Done():
				out.Release()
				return ctx.Err()
			}
		})
		if streamSchema == nil {
			if err == nil && res != nil && res.Schema != nil && res.Schema.NumFields() == sch.NumFields() {
				sch = renamed(res.Schema, sch)
			}
			started <- start{schema: sch, err: err}
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				glog.V(1).Infof("flight sql: %s: %v", ses.caller, err)
			}
			select {
			case ch <- flight.StreamChunk{Err: grpcutil.ToStatus(err)}:
			case <-ctx.Done():
			}
		}
	}()
	first := <-started
	if first.err != nil {
		return nil, nil, grpcutil.ToStatus(first.err)
	}
	return first.schema, ch, nil
}

// renamed is got with the announced names (the types are got's).
func renamed(got, announced *arrow.Schema) *arrow.Schema {
	if got.NumFields() != announced.NumFields() {
		return got
	}
	fields := make([]arrow.Field, got.NumFields())
	for i, f := range got.Fields() {
		f.Name = announced.Field(i).Name
		fields[i] = f
	}
	md := got.Metadata()
	return arrow.NewSchema(fields, &md)
}

// CancelFlightInfo cancels the caller's running reads of the info's
// tickets.
func (s *Server) CancelFlightInfo(ctx context.Context, req *flight.CancelFlightInfoRequest) (flight.CancelFlightInfoResult, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return flight.CancelFlightInfoResult{}, err
	}
	cancelled := false
	for _, ep := range req.GetInfo().GetEndpoint() {
		tkt := ep.GetTicket().GetTicket()
		for _, key := range s.ticketKeys(ses, tkt) {
			s.mu.Lock()
			cancel, ok := s.running[key]
			s.mu.Unlock()
			if ok {
				cancel()
				cancelled = true
			}
		}
	}
	if cancelled {
		return flight.CancelFlightInfoResult{Status: flight.CancelStatusCancelled}, nil
	}
	return flight.CancelFlightInfoResult{Status: flight.CancelStatusNotCancellable}, nil
}

// ticketKeys are the running-read keys a ticket of ses may have: a
// statement's query, or a prepared statement's handle inside the ticket.
func (s *Server) ticketKeys(ses *session, tkt []byte) []string {
	var keys []string
	if q, err := afsql.GetStatementQueryTicket(&flight.Ticket{Ticket: tkt}); err == nil {
		keys = append(keys, ses.id+"\x00statement:"+string(q.GetStatementHandle()))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.running {
		if h, ok := strings.CutPrefix(key, ses.id+"\x00prepared:"); ok && h != "" && bytes.Contains(tkt, []byte(h)) {
			keys = append(keys, key)
		}
	}
	return keys
}

// CreatePreparedStatement parses the query (with $n or ? parameters).
func (s *Server) CreatePreparedStatement(ctx context.Context, req afsql.ActionCreatePreparedStatementRequest) (afsql.ActionCreatePreparedStatementResult, error) {
	var res afsql.ActionCreatePreparedStatementResult
	ses, err := callerOf(ctx)
	if err != nil {
		return res, err
	}
	if len(req.GetTransactionId()) > 0 {
		return res, status.Error(codes.Unimplemented, "transactions are not supported: lakeweed's Flight SQL is read-only")
	}
	st, err := s.statement(ctx, req.GetQuery())
	if err != nil {
		return res, grpcutil.ToStatus(err)
	}
	handle := newToken()[:32]
	if err := s.keep(handle, &prepared{owner: ses.id, sql: req.GetQuery(), st: st}, false); err != nil {
		return res, err
	}
	res.Handle = []byte(handle)
	if st.Params == 0 {
		conn, err := s.connectorFor(ctx, ses)
		if err != nil {
			return res, grpcutil.ToStatus(err)
		}
		sch, err := sqlexec.Schema(ctx, conn, st, sqlexec.Options{})
		if err != nil {
			s.prepared.Remove(handle)
			return res, grpcutil.ToStatus(err)
		}
		res.DatasetSchema = sch
	}
	return res, nil
}

func (s *Server) preparedOf(ses *session, handle []byte) (*prepared, error) {
	if len(handle) > maxStatementHandleLen {
		return nil, status.Error(codes.InvalidArgument, "prepared statement handle too long")
	}
	p, ok := s.prepared.Get(string(handle))
	if !ok || p.owner != ses.id {
		return nil, status.Error(codes.NotFound, "no such prepared statement (closed, expired, or another session's)")
	}
	return p, nil
}

// ClosePreparedStatement forgets a prepared statement.
func (s *Server) ClosePreparedStatement(ctx context.Context, req afsql.ActionClosePreparedStatementRequest) error {
	ses, err := callerOf(ctx)
	if err != nil {
		return err
	}
	if _, err := s.preparedOf(ses, req.GetPreparedStatementHandle()); err != nil {
		return err
	}
	s.prepared.Remove(string(req.GetPreparedStatementHandle()))
	return nil
}

// DoPutPreparedStatementQuery binds parameters: one row of values.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd afsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.preparedOf(ses, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	var params []any
	rows := 0
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			rows++
			if rows > maxParameterRows {
				return nil, status.Error(codes.InvalidArgument, "bind one row of parameters to a query (got more)")
			}
			params = make([]any, rec.NumCols())
			for c := range params {
				v, err := paramValue(rec.Column(c), r)
				if err != nil {
					return nil, status.Errorf(codes.InvalidArgument, "parameter %d: %v", c+1, err)
				}
				params[c] = v
			}
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "parameters: %v", err)
	}
	bound := *p
	bound.params = params
	if _, err := s.bind(ctx, &bound); err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	if err := s.keep(string(cmd.GetPreparedStatementHandle()), &bound, true); err != nil {
		return nil, err
	}
	return cmd.GetPreparedStatementHandle(), nil
}

// paramValue is row r of a parameter column as a Go value.
func paramValue(a arrow.Array, r int) (any, error) {
	if a.IsNull(r) {
		return nil, nil
	}
	switch x := a.(type) {
	case *array.Int64:
		return x.Value(r), nil
	case *array.Int32:
		return x.Value(r), nil
	case *array.Int16:
		return x.Value(r), nil
	case *array.Int8:
		return x.Value(r), nil
	case *array.Uint32:
		return x.Value(r), nil
	case *array.Uint16:
		return x.Value(r), nil
	case *array.Uint8:
		return x.Value(r), nil
	case *array.Float64:
		return x.Value(r), nil
	case *array.Float32:
		return x.Value(r), nil
	case *array.String:
		return x.Value(r), nil
	case *array.LargeString:
		return x.Value(r), nil
	case *array.Boolean:
		return x.Value(r), nil
	case *array.Timestamp:
		unit := x.DataType().(*arrow.TimestampType).Unit
		return x.Value(r).ToTime(unit), nil
	case *array.Date32:
		return x.Value(r).FormattedString(), nil
	case *array.DenseUnion:
		// ADBC binds through a dense union of types
		child := x.Field(x.ChildID(r))
		return paramValue(child, int(x.ValueOffset(r)))
	}
	return nil, fmt.Errorf("values of type %s are not supported", a.DataType())
}

// GetFlightInfoPreparedStatement says the bound statement's schema.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd afsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.preparedOf(ses, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	st, err := s.bind(ctx, p)
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	conn, err := s.connectorFor(ctx, ses)
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	sch, err := sqlexec.Schema(ctx, conn, st, sqlexec.Options{})
	if err != nil {
		return nil, grpcutil.ToStatus(err)
	}
	return s.flightInfo(desc, desc.Cmd, sch), nil
}

// GetSchemaPreparedStatement says the bound statement's schema.
func (s *Server) GetSchemaPreparedStatement(ctx context.Context, cmd afsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return schemaOf(s.GetFlightInfoPreparedStatement(ctx, cmd, desc))
}

// DoGetPreparedStatement runs the bound statement.
func (s *Server) DoGetPreparedStatement(ctx context.Context, cmd afsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ses, err := callerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.preparedOf(ses, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	st, err := s.bind(ctx, p)
	if err != nil {
		return nil, nil, grpcutil.ToStatus(err)
	}
	return s.run(ctx, ses, "prepared:"+string(cmd.GetPreparedStatementHandle()), st)
}

// schemaOf is the schema of a flight info.
func schemaOf(info *flight.FlightInfo, err error) (*flight.SchemaResult, error) {
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: info.Schema}, nil
}
