package safe

import (
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ForEach runs fn over the indices [0, n) in chunks of chunk indices
// (fn(lo, hi)) on at most workers goroutines — the caller's among them,
// the others an errgroup's — each taking the next chunk in turn, and
// returns when every chunk has run. A panic in fn is re-raised in the
// caller once the workers are done (where its handler's recovery sees it);
// the other workers finish their chunks first.
//
//	chunk 1: one index a pull (uneven work: decoding columns, looking up hosts)
//	chunk ⌈n/workers⌉: one contiguous stretch a worker (neighbours' writes
//	share no cache lines across cores)
//
// workers ≤ 1, or a single chunk, runs fn on the caller alone.
func ForEach(n, workers, chunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunk = max(1, chunk)
	chunks := (n + chunk - 1) / chunk
	workers = min(workers, chunks)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var next atomic.Int64
	var panics Panics
	work := func() {
		defer panics.Catch()
		for c := int(next.Add(1) - 1); c < chunks; c = int(next.Add(1) - 1) {
			fn(c*chunk, min(n, (c+1)*chunk))
		}
	}
	var g errgroup.Group
	for range workers - 1 {
		g.Go(func() error { work(); return nil })
	}
	work()
	_ = g.Wait()
	panics.Rethrow()
}
