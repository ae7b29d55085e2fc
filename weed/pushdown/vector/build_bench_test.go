package vector

import (
	"testing"
	"time"
)

// BenchmarkBuildOneCoreAgainstTwo reports index build time on one worker
// and on two (make bench; the figure the design asks for: ≥1.7×).
func BenchmarkBuildOneCoreAgainstTwo(b *testing.B) {
	m := clustered(100_000, 64, 21)
	for _, pq := range []bool{false, true} {
		var took [3]time.Duration
		for _, w := range []int{1, 2} {
			t0 := time.Now()
			for range b.N {
				if _, err := Build(m, BuildOptions{PQ: pq, Seed: 1, Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
			took[w] = time.Since(t0) / time.Duration(b.N)
		}
		b.Logf("pq=%v 100,000 × 64: 1 core %v, 2 cores %v, speed-up %.2f×", pq, took[1].Round(time.Millisecond), took[2].Round(time.Millisecond),
			float64(took[1])/float64(took[2]))
	}
}
