package safe

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Every index runs exactly once, in chunks of the size asked (the last
// shorter), on at most the workers asked.
func TestForEachRunsEveryIndexOnceInChunksOnBoundedWorkers(t *testing.T) {
	for _, c := range []struct{ n, workers, chunk int }{{0, 4, 1}, {1, 4, 1}, {10, 1, 3}, {1000, 4, 1}, {1000, 3, 334}, {1001, 8, 64}} {
		seen := make([]atomic.Int32, c.n)
		var mu sync.Mutex
		var active, most int
		ForEach(c.n, c.workers, c.chunk, func(lo, hi int) {
			mu.Lock()
			active++
			most = max(most, active)
			mu.Unlock()
			if c.workers > 1 && hi-lo > c.chunk || hi < lo {
				t.Errorf("n %d: chunk [%d, %d) past %d", c.n, lo, hi, c.chunk)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
			mu.Lock()
			active--
			mu.Unlock()
		})
		for i := range seen {
			if v := seen[i].Load(); v != 1 {
				t.Fatalf("n %d workers %d chunk %d: index %d ran %d times", c.n, c.workers, c.chunk, i, v)
			}
		}
		if most > max(1, c.workers) {
			t.Fatalf("n %d: %d chunks ran at once, workers %d", c.n, most, c.workers)
		}
	}
}

// A panic in a worker is re-raised in the caller after the others finish.
func TestForEachReraisesAWorkersPanicInTheCaller(t *testing.T) {
	var ran atomic.Int32
	defer func() {
		r := recover()
		p, ok := r.(*Panicked)
		if !ok || p.Value != "boom" {
			t.Fatalf("recovered %v, want the worker's panic", r)
		}
		if ran.Load() != 99 {
			t.Fatalf("%d of 99 other indices ran", ran.Load())
		}
	}()
	ForEach(100, 4, 1, func(lo, hi int) {
		if lo == 37 {
			panic("boom")
		}
		ran.Add(1)
	})
	t.Fatal("ForEach returned after a panic")
}
