package flightsql

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// What statements cost the server, and its bounds on them. A parsed
// statement holds far more than its text (CockroachDB's syntax tree and the
// WHERE converted once): an IN list of 1 MiB holds ~70 MiB. So parses run
// under a weight of SQL bytes, and the parses and prepared statements kept
// are bounded by their estimated bytes, not their count:
//
//	SQL ─ at most maxSQLBytes ─▶ parse (parsing: at most maxParsingSQLBytes of SQL at once)
//	      │                     ─▶ parsed: a byte-bounded LRU (its estimate, statementCost)
//	      ▼
//	CreatePreparedStatement ─▶ a session may hold maxPreparedPerSession statements and
//	      maxPreparedBytesPerSession of estimate (past them: RESOURCE_EXHAUSTED, naming both);
//	      all sessions' together maxPreparedBytes (past it the least recently used is
//	      forgotten: its handle then answers NOT_FOUND)
const (
	maxSQLBytes = 1 << 20
	// heldBytesPerSQLByte is what a parse holds per byte of SQL at most
	// (measured: ~70 for an IN list of one-digit numbers, the densest
	// shape), rounded up.
	heldBytesPerSQLByte        = 96
	maxParsingSQLBytes         = 4 << 20
	maxParsedBytes             = 64 << 20
	maxPreparedBytes           = 1 << 30
	maxPreparedPerSession      = 1000
	maxPreparedBytesPerSession = 256 << 20
)

// statementCost is the estimated bytes a parse of sql holds.
func statementCost(sql string) int64 { return heldBytesPerSQLByte*int64(len(sql)) + 4096 }

// paramsCost is the estimated bytes bound parameters hold.
func paramsCost(params []any) int64 {
	n := int64(0)
	for _, p := range params {
		n += 32
		switch v := p.(type) {
		case string:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		}
	}
	return n
}

// statements parses SQL and keeps parses and prepared statements within
// their bounds.
type statements struct {
	parsing *semaphore.Weighted
	// parsed statements by their SQL: GetFlightInfo parses a query, DoGet
	// redeems its ticket (the SQL) and finds the parse (statements are not
	// modified once parsed)
	parsed   *bytelru.Cache[string, *sqlstmt.Statement]
	prepared *bytelru.Cache[string, *prepared]
	mu       sync.Mutex
	held     map[string]sessionHold // session id → its prepared statements
}

// sessionHold is what one session's prepared statements hold.
type sessionHold struct {
	count int
	bytes int64
}

type prepared struct {
	owner  string // session id
	sql    string
	st     *sqlstmt.Statement
	params []any
}

// cost is what p counts in its session's hold and the cache: its parse
// and its bound parameters.
func (p *prepared) cost() int64 { return statementCost(p.sql) + paramsCost(p.params) }

func newStatements() *statements {
	ss := &statements{
		parsing: semaphore.NewWeighted(maxParsingSQLBytes),
		parsed:  bytelru.New[string, *sqlstmt.Statement](maxParsedBytes, bytelru.Options[string, *sqlstmt.Statement]{}),
		held:    map[string]sessionHold{},
	}
	ss.prepared = bytelru.New[string, *prepared](maxPreparedBytes, bytelru.Options[string, *prepared]{
		// runs under the cache's lock: never calls back into it
		OnEvict: func(_ string, p *prepared) { ss.release(p.owner, p.cost()) },
	})
	return ss
}

// statement parses sql (or finds its parse: the SQL of a ticket was parsed
// when its flight was described), refusing what the front end does not
// support with an error naming it.
func (ss *statements) statement(ctx context.Context, sql string) (*sqlstmt.Statement, error) {
	if len(sql) > maxSQLBytes {
		return nil, perr.New(perr.ResourceExhausted, "SQL of %d bytes: at most %d", len(sql), maxSQLBytes)
	}
	if st, ok := ss.parsed.Get(sql); ok {
		return st, nil
	}
	st, err := underParseWeight(ctx, ss, sql, func() (*sqlstmt.Statement, error) { return sqlstmt.Parse(sql) })
	if err != nil {
		return nil, err // refusals are not kept
	}
	ss.parsed.Add(sql, st, statementCost(sql))
	return st, nil
}

// bind is a prepared statement with its parameters: binding parses the
// statement's text again, so it runs under the parse weight too.
func (ss *statements) bind(ctx context.Context, p *prepared) (*sqlstmt.Statement, error) {
	if p.st.Params == 0 && len(p.params) == 0 {
		return p.st, nil
	}
	return underParseWeight(ctx, ss, p.sql, func() (*sqlstmt.Statement, error) { return p.st.Bind(p.params) })
}

// underParseWeight runs parse, which parses sql, once sql's bytes of the
// parse weight are free (or fails with the caller's context).
func underParseWeight(ctx context.Context, ss *statements, sql string, parse func() (*sqlstmt.Statement, error)) (*sqlstmt.Statement, error) {
	w := max(int64(len(sql)), 1)
	if err := ss.parsing.Acquire(ctx, w); err != nil {
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("waiting to parse the statement: %w", err))
	}
	defer ss.parsing.Release(w)
	return parse()
}

// keep stores p under handle, replacing what it held (a statement now
// bound to parameters). A new statement is refused when its session is at
// its bounds.
func (ss *statements) keep(handle string, p *prepared, replacing bool) error {
	cost := p.cost()
	ss.mu.Lock()
	h := ss.held[p.owner]
	if !replacing && (h.count+1 > maxPreparedPerSession || h.bytes+cost > maxPreparedBytesPerSession) {
		ss.mu.Unlock()
		return status.Errorf(codes.ResourceExhausted, "this session holds %d prepared statements of about %d MiB: at most %d and %d MiB; close some (ClosePreparedStatement) first",
			h.count, h.bytes>>20, maxPreparedPerSession, maxPreparedBytesPerSession>>20)
	}
	h.count++
	h.bytes += cost
	ss.held[p.owner] = h
	ss.mu.Unlock()
	if !ss.prepared.Add(handle, p, cost) {
		ss.release(p.owner, cost)
		return status.Errorf(codes.ResourceExhausted, "the prepared statement would hold about %d MiB: more than the server keeps", cost>>20)
	}
	return nil
}

func (ss *statements) release(owner string, cost int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	h := ss.held[owner]
	h.count--
	h.bytes -= cost
	if h.count <= 0 {
		delete(ss.held, owner)
		return
	}
	ss.held[owner] = h
}

// holding is what owner's prepared statements hold now.
func (ss *statements) holding(owner string) sessionHold {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.held[owner]
}
