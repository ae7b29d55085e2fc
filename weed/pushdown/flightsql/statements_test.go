package flightsql

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
)

// A query is parsed once across its two calls (GetFlightInfo parses it, DoGet
// redeems the ticket holding its SQL): the same SQL finds the same parse;
// SQL the front end refuses is refused each time and not kept, and SQL
// past the bound is refused before it is parsed.
func TestAStatementIsParsedOnceForItsFlightInfoAndItsTicket(t *testing.T) {
	ss := newStatements()
	ctx := context.Background()
	const q = "SELECT COUNT(*) FROM demo.events WHERE status = 'error'"
	a, err := ss.statement(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ss.statement(ctx, q); err != nil || b != a {
		t.Fatalf("the second call parsed the SQL again (%v)", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := ss.statement(ctx, "SELECT * FROM a JOIN b ON true"); err == nil {
			t.Fatalf("call %d: a join was accepted", i+1)
		}
	}
	if ss.parsed.Len() != 1 {
		t.Fatalf("%d statements kept, want the one parsed", ss.parsed.Len())
	}
	if _, err := ss.statement(ctx, "SELECT 1 FROM a.b WHERE x = '"+strings.Repeat("x", maxSQLBytes)+"'"); status.Code(grpcutil.ToStatus(err)) != codes.ResourceExhausted {
		t.Fatalf("SQL past the bound: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// inList is a statement of about n bytes whose parse holds the most per
// byte: an IN list of one-digit numbers.
func inList(n int, salt int) string {
	var b strings.Builder
	b.WriteString("SELECT x FROM ns.t WHERE y = " + strconv.Itoa(salt) + " AND x IN (")
	for b.Len() < n {
		b.WriteString("1,")
	}
	b.WriteString("2)")
	return b.String()
}

// Parses are kept by what they hold, not by their count: statements of
// 512 KiB (each parse ~35 MiB) are not all kept, while small ones are.
func TestParsesKeptAreBoundedByTheBytesTheyHold(t *testing.T) {
	ss := newStatements()
	ctx := context.Background()
	for i := 0; i < 8; i++ {
		if _, err := ss.statement(ctx, inList(512<<10, i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := ss.parsed.Stats(); st.Bytes > maxParsedBytes || st.Entries > 1 {
		t.Fatalf("kept %d parses of %d estimated bytes: want at most one, within %d", st.Entries, st.Bytes, maxParsedBytes)
	}
	for i := 0; i < 100; i++ {
		if _, err := ss.statement(ctx, "SELECT x FROM ns.t WHERE y = "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := ss.parsed.Len(); n < 100 {
		t.Fatalf("%d small parses kept, want all 100", n)
	}
}

// A session's prepared statements are bounded in number and in estimated
// bytes, with RESOURCE_EXHAUSTED naming the bound; closing one frees its
// share, and another session is not affected.
func TestASessionsPreparedStatementsAreBoundedAndClosingFreesTheirShare(t *testing.T) {
	ss := newStatements()
	ctx := context.Background()
	const q = "SELECT x FROM ns.t WHERE y = $1"
	st, err := ss.statement(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < maxPreparedPerSession; i++ {
		if err := ss.keep("h"+strconv.Itoa(i), &prepared{owner: "a", sql: q, st: st}, false); err != nil {
			t.Fatalf("statement %d: %v", i+1, err)
		}
	}
	err = ss.keep("one-more", &prepared{owner: "a", sql: q, st: st}, false)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "at most 1000") {
		t.Fatalf("statement past the count: %v, want RESOURCE_EXHAUSTED naming the bound", err)
	}
	if err := ss.keep("b0", &prepared{owner: "b", sql: q, st: st}, false); err != nil {
		t.Fatalf("another session refused: %v", err)
	}
	// binding parameters replaces a statement: not one more
	if err := ss.keep("h0", &prepared{owner: "a", sql: q, st: st, params: []any{int64(1)}}, true); err != nil {
		t.Fatalf("binding at the bound: %v", err)
	}
	if h := ss.holding("a"); h.count != maxPreparedPerSession || h.bytes != int64(maxPreparedPerSession)*statementCost(q)+32 {
		t.Fatalf("session a holds %+v after a bind", h)
	}
	ss.prepared.Remove("h1")
	if err := ss.keep("one-more", &prepared{owner: "a", sql: q, st: st}, false); err != nil {
		t.Fatalf("after a close: %v", err)
	}

	big := inList(400<<10, 0) // ~38 MiB estimated: the per-session bytes allow 6
	bst, err := ss.statement(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for i := 0; i < 10; i++ {
		err := ss.keep("big"+strconv.Itoa(i), &prepared{owner: "c", sql: big, st: bst}, false)
		if err == nil {
			kept++
			continue
		}
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "256 MiB") {
			t.Fatalf("statement past the bytes: %v", err)
		}
	}
	if want := int(maxPreparedBytesPerSession / statementCost(big)); kept != want {
		t.Fatalf("kept %d large statements, want %d", kept, want)
	}
}

// Every session's statements together stay within maxPreparedBytes: the
// least recently used is forgotten, and what it held is released from its
// session's share.
func TestAllPreparedStatementsTogetherStayWithinTheirBytes(t *testing.T) {
	ss := newStatements()
	sql := strings.Repeat("x", (200<<20)/heldBytesPerSQLByte) // a parse estimated at ~200 MiB
	cost := statementCost(sql)
	for i := 0; i < 12; i++ {
		owner := "s" + strconv.Itoa(i)
		if err := ss.keep(owner+"-h", &prepared{owner: owner, sql: sql}, false); err != nil {
			t.Fatal(err)
		}
	}
	st := ss.prepared.Stats()
	if st.Bytes > maxPreparedBytes || st.Entries != maxPreparedBytes/cost {
		t.Fatalf("%d statements of %d bytes kept, want %d within %d", st.Entries, st.Bytes, maxPreparedBytes/cost, maxPreparedBytes)
	}
	if h := ss.holding("s0"); h.count != 0 || h.bytes != 0 {
		t.Fatalf("the forgotten session still holds %+v", h)
	}
	if h := ss.holding("s11"); h.count != 1 || h.bytes != cost {
		t.Fatalf("the newest session holds %+v", h)
	}
}

// At most maxParsingSQLBytes of SQL parse at once: a parse past it waits,
// and gives up with the caller's context.
func TestParsesWaitForTheirWeightAndGiveUpWithTheCaller(t *testing.T) {
	ss := newStatements()
	if !ss.parsing.TryAcquire(maxParsingSQLBytes) {
		t.Fatal("the parse weight is taken at start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := ss.statement(ctx, "SELECT x FROM ns.t")
	if status.Code(grpcutil.ToStatus(err)) != codes.Unavailable {
		t.Fatalf("a parse past the weight: %v, want UNAVAILABLE after the caller's deadline", err)
	}
	ss.parsing.Release(maxParsingSQLBytes)
	if _, err := ss.statement(context.Background(), "SELECT x FROM ns.t"); err != nil {
		t.Fatal(err)
	}
}
