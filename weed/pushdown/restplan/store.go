package restplan

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// planStatus is a plan's state as the REST spec names it.
type planStatus string

const (
	statusSubmitted planStatus = "submitted"
	statusCompleted planStatus = "completed"
	statusFailed    planStatus = "failed"
	statusCancelled planStatus = "cancelled"
)

// scanPlan is one server-side plan: running, or holding its pages.
type scanPlan struct {
	id     string
	owner  string // callerKey of the caller that made it
	table  string // tableRef.key
	cancel context.CancelFunc
	done   chan struct{} // closed when planning ended

	mu     sync.Mutex
	status planStatus
	err    *errorModel
	// requestError: the request was at fault (answered 400/404 at once)
	requestError bool
	pages        []page // pages[0] goes inline in the completed answer
	expires      time.Time
	// fetched marks the plan-task pages fetched; once every one was, the
	// plan is drained: the spec needs no cancel then, so it is kept only
	// drainedGrace longer (for a client's retry of the last fetch).
	fetched   []bool
	unfetched int
	drained   bool
}

// drainedGrace is how long a plan whose plan tasks were all fetched stays.
const drainedGrace = 30 * time.Second

// markFetched records that page was fetched (p.mu held).
func (p *scanPlan) markFetched(page int) {
	if p.fetched == nil {
		p.fetched, p.unfetched = make([]bool, len(p.pages)), len(p.pages)-1
	}
	if page <= 0 || page >= len(p.fetched) || p.fetched[page] {
		return
	}
	p.fetched[page] = true
	if p.unfetched--; p.unfetched == 0 {
		p.drained = true
		if soon := time.Now().Add(drainedGrace); soon.Before(p.expires) {
			p.expires = soon
		}
	}
}

// store keeps plans in memory. Plans that hold pages or still run count
// against MaxPlans; plans answered whole at once leave only a tombstone
// (so a client's cancel of one answers 204), kept in a bounded LRU.
type store struct {
	cfg   Config
	mu    sync.Mutex
	plans map[string]*scanPlan
	done  *lru.Cache[string, tombstone]
}

type tombstone struct {
	owner, table string
	expires      time.Time
}

func newStore(cfg Config) *store {
	done, _ := lru.New[string, tombstone](100_000)
	return &store{cfg: cfg, plans: map[string]*scanPlan{}, done: done}
}

// newID returns 128 random bits, URL-safe.
func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// perCaller is how many of the MaxPlans one caller may hold: an eighth
// (at least one), so one caller's plans cannot refuse everyone else's.
func (s *store) perCaller() int { return max(1, s.cfg.MaxPlans/8) }

// add registers a running plan, or returns nil when MaxPlans are kept
// (callerFull: when the caller holds its share of them).
func (s *store) add(owner, table string, cancel context.CancelFunc) (p *scanPlan, callerFull bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.plans) >= s.cfg.MaxPlans {
		return nil, false
	}
	held := 0
	for _, q := range s.plans {
		if q.owner == owner {
			held++
		}
	}
	if held >= s.perCaller() {
		return nil, true
	}
	p = &scanPlan{id: newID(), owner: owner, table: table, cancel: cancel, done: make(chan struct{}), status: statusSubmitted,
		expires: time.Now().Add(s.cfg.PlanTTL)}
	s.plans[p.id] = p
	return p, false
}

// get returns the plan id of owner on table, extending its life; nil when
// there is none (never made, expired, or another caller's or table's).
func (s *store) get(id, owner, table string) *scanPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.plans[id]
	if p == nil || p.owner != owner || p.table != table {
		return nil
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.After(p.expires) {
		delete(s.plans, id)
		p.cancel()
		return nil
	}
	if !p.drained {
		p.expires = now.Add(s.cfg.PlanTTL)
	}
	return p
}

// retire turns a plan answered whole into a tombstone.
func (s *store) retire(p *scanPlan) {
	s.mu.Lock()
	delete(s.plans, p.id)
	s.mu.Unlock()
	s.done.Add(p.id, tombstone{owner: p.owner, table: p.table, expires: time.Now().Add(s.cfg.PlanTTL)})
}

// drop forgets p.
func (s *store) drop(p *scanPlan) {
	s.mu.Lock()
	delete(s.plans, p.id)
	s.mu.Unlock()
	p.cancel()
}

// remove drops a plan (cancelled, or failed and reported); it reports
// whether owner had such a plan or tombstone.
func (s *store) remove(id, owner, table string) bool {
	if p := s.get(id, owner, table); p != nil {
		s.mu.Lock()
		delete(s.plans, id)
		s.mu.Unlock()
		p.cancel()
		return true
	}
	if t, ok := s.done.Peek(id); ok && t.owner == owner && t.table == table && time.Now().Before(t.expires) {
		s.done.Remove(id)
		return true
	}
	return false
}

// janitor drops expired plans.
func (s *store) janitor(ctx context.Context) {
	every := min(max(s.cfg.PlanTTL/4, 100*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			for id, p := range s.plans {
				p.mu.Lock()
				expired := now.After(p.expires)
				p.mu.Unlock()
				if expired {
					delete(s.plans, id)
					p.cancel()
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *store) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, p := range s.plans {
		p.cancel()
		delete(s.plans, id)
	}
}
