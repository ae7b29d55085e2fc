package connector

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/semaphore"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// unit is one row group of one file.
type unit struct {
	file *fileRead
	ref  *pushdown_pb.RowGroupRef
	cost int64 // of the read-ahead budget (set when it is dispatched)
	out  chan unitResult
}

type unitResult struct {
	rec arrow.RecordBatch
	err error
}

// scheduler runs a plan's units (row groups) on the workers and hands
// their results on in plan order:
//
//	units, in plan order ─▶ dispatcher: cost(u) of the read-ahead budget
//	   │                     (waits while units started but not taken
//	   │                     hold it), then a worker slot ─▶ run(u)
//	   ▼
//	taker, in plan order ◀── each unit's result ─▶ take(u, result)
//	   take says done (a LIMIT met): what still runs is cancelled, the
//	   results not taken are released
//
// Under a LIMIT one unit runs at first: each unit taken without meeting
// it lets one more run at once, up to workers; a unit's slot is freed
// when it is taken, not when it ends, so no unit starts that the LIMIT
// may not need (started, it would be cancelled before its reads reach
// the range cache: read again by each query).
type scheduler struct {
	workers int
	budget  *budget
	limited bool
}

// run runs units through run and takes their results in order; it
// returns the first error of a unit or of take.
func (s *scheduler) run(ctx context.Context, units []*unit, cost func(context.Context, *unit) int64,
	run func(context.Context, *unit) unitResult, take func(*unit, unitResult) (done bool, err error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, s.workers)
	narrowed := 0
	if s.limited {
		for ; narrowed < s.workers-1; narrowed++ {
			sem <- struct{}{}
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, u := range units {
			if ctx.Err() != nil {
				// stopped (a LIMIT met, an error): the units left are
				// not prepared, only told
				u.out <- unitResult{err: ctx.Err()}
				continue
			}
			u.cost = cost(ctx, u)
			if !s.budget.acquire(ctx, u.cost) {
				u.out <- unitResult{err: ctx.Err()}
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				s.budget.release(u.cost)
				u.out <- unitResult{err: ctx.Err()}
				continue
			}
			wg.Add(1)
			go func(u *unit) {
				defer wg.Done()
				if !s.limited {
					defer func() { <-sem }()
				}
				u.out <- run(ctx, u)
			}(u)
		}
	}()
	for i, u := range units {
		r := <-u.out
		if r.err != nil {
			cancel()
			return r.err
		}
		done, err := take(u, r)
		if err != nil {
			cancel()
			return err
		}
		if done {
			cancel() // LIMIT reached: stop what still runs
			for _, rest := range units[i+1:] {
				if r := <-rest.out; r.rec != nil {
					r.rec.Release()
				}
			}
			return nil
		}
		s.budget.release(u.cost) // taken: the next may start
		if s.limited {
			<-sem
		}
		if narrowed > 0 {
			<-sem
			narrowed--
		}
	}
	return nil
}

// budget bounds the read-ahead: the bytes of units started but not yet
// taken in order, as a weighted semaphore (FIFO: units start in plan
// order). A unit larger than the whole budget takes all of it, so one
// unit always runs, however large, alone. capacity <= 0: unbounded.
type budget struct {
	w        *semaphore.Weighted
	capacity int64
}

func newBudget(capacity int64) *budget {
	if capacity <= 0 {
		return &budget{}
	}
	return &budget{w: semaphore.NewWeighted(capacity), capacity: capacity}
}

// acquire takes n bytes of the budget, waiting while units started but not
// taken hold it; false when ctx ended first.
func (b *budget) acquire(ctx context.Context, n int64) bool {
	if b.w == nil {
		return ctx.Err() == nil
	}
	return b.w.Acquire(ctx, b.weight(n)) == nil
}

// release gives back what acquire(n) took.
func (b *budget) release(n int64) {
	if b.w != nil {
		b.w.Release(b.weight(n))
	}
}

func (b *budget) weight(n int64) int64 { return min(max(n, 0), b.capacity) }
