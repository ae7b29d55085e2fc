package vector

import (
	"runtime"

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
	safe.ForEach(n, w, chunk, fn)
}
