package vector

import (
	"fmt"
	"testing"
)

// BenchmarkBuild times index builds on every core GOMAXPROCS allows: run
// with -cpu 1,2 to read the design's build scaling (2 cores ≥ 1.7× one):
//
//	go test -run - -bench Build -cpu 1,2 ./weed/pushdown/vector/
func BenchmarkBuild(b *testing.B) {
	for _, c := range []struct {
		rows, dim int
		pq        bool
	}{{100_000, 64, false}, {100_000, 64, true}, {15_000, 784, false}} {
		m := clustered(c.rows, c.dim, 21)
		kind := map[bool]string{false: "ivf", true: "ivf_pq"}[c.pq]
		b.Run(fmt.Sprintf("%s-%dx%d", kind, c.rows, c.dim), func(b *testing.B) {
			for b.Loop() {
				if _, err := Build(m, BuildOptions{PQ: c.pq, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
