package connector

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// unitsOf are n units of one file, row group i the i-th.
func unitsOf(n int) []*unit {
	f := &fileRead{}
	units := make([]*unit, n)
	for i := range units {
		units[i] = &unit{file: f, ref: &pushdown_pb.RowGroupRef{RowGroup: int32(i)}, out: make(chan unitResult, 1)}
	}
	return units
}

// within runs fn, failing the test when it has not returned after d (a
// scheduler that deadlocks fails here instead of at the package timeout).
func within(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the scheduler did not return within %v", d)
		return nil
	}
}

// Units finishing in any order are taken in plan order, each once; the
// bytes of units started but not yet taken never pass the budget, except a
// unit larger than the whole budget, which runs alone.
func TestTheSchedulerTakesUnitsInPlanOrderWithinItsReadAheadBudget(t *testing.T) {
	const capacity = 100
	for _, limited := range []bool{false, true} {
		units := unitsOf(40)
		cost := func(_ context.Context, u *unit) int64 {
			if u.ref.RowGroup == 17 {
				return 5 * capacity // larger than the budget: runs alone
			}
			return 30
		}
		var mu sync.Mutex
		held, maxHeld, running, maxRunning := int64(0), int64(0), 0, 0
		var bigWithOthers atomic.Bool
		r := rand.New(rand.NewPCG(3, 4))
		delays := make([]time.Duration, len(units))
		for i := range delays {
			delays[i] = time.Duration(r.IntN(2000)) * time.Microsecond
		}
		run := func(ctx context.Context, u *unit) unitResult {
			mu.Lock()
			held += u.cost
			running++
			if u.cost <= capacity {
				maxHeld = max(maxHeld, held)
			} else if held != u.cost {
				bigWithOthers.Store(true)
			}
			maxRunning = max(maxRunning, running)
			mu.Unlock()
			time.Sleep(delays[u.ref.RowGroup])
			mu.Lock()
			running--
			mu.Unlock()
			return unitResult{}
		}
		var taken []int32
		take := func(u *unit, _ unitResult) (bool, error) {
			mu.Lock()
			held -= u.cost
			mu.Unlock()
			taken = append(taken, u.ref.RowGroup)
			return false, nil
		}
		s := &scheduler{workers: 4, budget: newBudget(capacity), limited: limited}
		if err := within(t, 30*time.Second, func() error { return s.run(context.Background(), units, cost, run, take) }); err != nil {
			t.Fatal(err)
		}
		for i, rg := range taken {
			if rg != int32(i) {
				t.Fatalf("limited %v: unit %d taken at position %d: %v", limited, rg, i, taken)
			}
		}
		if len(taken) != len(units) {
			t.Fatalf("limited %v: %d units taken of %d", limited, len(taken), len(units))
		}
		if maxHeld > capacity || bigWithOthers.Load() {
			t.Fatalf("limited %v: read-ahead held %d bytes of a %d budget; the large unit ran beside others %v", limited, maxHeld, capacity, bigWithOthers.Load())
		}
		if !limited && maxHeld < 60 {
			t.Fatalf("the budget let %d bytes run at once: no read-ahead", maxHeld)
		}
	}
}

// Take saying done (a LIMIT met) stops the run: the scheduler returns
// without error, the units still running see their context cancelled,
// the units not yet dispatched are not prepared (the connector read each
// one's footer, cancelled, on every LIMIT query), nothing after them is
// taken. A unit's error is returned as it is.
func TestTheSchedulerStopsWhenTakeIsDoneAndReturnsAUnitsError(t *testing.T) {
	units := unitsOf(50)
	var cancelled atomic.Int64
	run := func(ctx context.Context, u *unit) unitResult {
		if u.ref.RowGroup >= 3 {
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return unitResult{err: ctx.Err()}
			case <-time.After(10 * time.Second):
			}
		}
		return unitResult{}
	}
	var taken []int32
	take := func(u *unit, _ unitResult) (bool, error) {
		taken = append(taken, u.ref.RowGroup)
		return u.ref.RowGroup == 2, nil
	}
	s := &scheduler{workers: 4, budget: newBudget(0), limited: false}
	start := time.Now()
	var costed atomic.Int64 // units prepared (a footer read each, in the connector)
	cost := func(context.Context, *unit) int64 { costed.Add(1); return 1 }
	if err := within(t, 30*time.Second, func() error { return s.run(context.Background(), units, cost, run, take) }); err != nil {
		t.Fatal(err)
	}
	if len(taken) != 3 || time.Since(start) > 5*time.Second {
		t.Fatalf("taken %v in %v: want row groups 0-2, the rest cancelled", taken, time.Since(start))
	}
	if cancelled.Load() == 0 {
		t.Fatal("no running unit saw its context cancelled")
	}
	// the units the stop finds not yet dispatched are not prepared: at most
	// those running (workers) and the one waiting for a slot were
	if n := costed.Load(); n > 3+4+1 {
		t.Fatalf("%d of %d units prepared after the take was done at the third", n, len(units))
	}

	boom := errors.New("row group 5 does not decode")
	run = func(_ context.Context, u *unit) unitResult {
		if u.ref.RowGroup == 5 {
			return unitResult{err: boom}
		}
		return unitResult{}
	}
	taken = nil
	take = func(u *unit, _ unitResult) (bool, error) {
		taken = append(taken, u.ref.RowGroup)
		return false, nil
	}
	err := within(t, 30*time.Second, func() error {
		return (&scheduler{workers: 2, budget: newBudget(10)}).run(context.Background(), unitsOf(20), func(context.Context, *unit) int64 { return 3 }, run, take)
	})
	if !errors.Is(err, boom) || len(taken) != 5 {
		t.Fatalf("error %v after taking %v: want the unit's error after row groups 0-4", err, taken)
	}
}
