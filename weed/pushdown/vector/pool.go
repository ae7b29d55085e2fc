package vector

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// workers is n when positive, else every core.
func workers(n int) int {
	if n > 0 {
		return n
	}
	return max(1, runtime.GOMAXPROCS(0))
}

// parallelFor runs fn over [0, n) in chunks of chunk items on at most w
// goroutines (a bounded pool: the goroutines take chunks in turn).
func parallelFor(w, n, chunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunk = max(1, chunk)
	chunks := (n + chunk - 1) / chunk
	w = min(w, chunks)
	if w <= 1 {
		fn(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panics safe.Panics
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer panics.Catch()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				fn(c*chunk, min(n, (c+1)*chunk))
			}
		}()
	}
	wg.Wait()
	panics.Rethrow()
}
