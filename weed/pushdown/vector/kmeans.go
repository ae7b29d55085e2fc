package vector

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/viterin/vek/vek32"
)

// KMeansOptions tune KMeans.
type KMeansOptions struct {
	K          int   // centroids wanted
	Iterations int   // Lloyd iterations (default 10); fewer when nothing moves
	Seed       int64 // the same seed and points give the same centroids, on any number of workers
	Workers    int   // goroutines (0: every core)
}

// KMeans clusters n points of dim dimensions (row-major in points) into
// opt.K centroids (row-major): k-means++ seeding on a random subset of at
// most 16·K points, then Lloyd iterations whose assignment step runs on
// the worker pool and whose update step is sequential (so the result does
// not depend on the number of workers). With no more points than K every
// point is a centroid and the rest repeat the first.
func KMeans(points []float32, dim int, opt KMeansOptions) []float32 {
	n := len(points) / dim
	k := opt.K
	cent := make([]float32, k*dim)
	if n == 0 || k <= 0 {
		return cent
	}
	if n <= k {
		copy(cent, points[:n*dim])
		for c := n; c < k; c++ {
			copy(cent[c*dim:(c+1)*dim], points[:dim])
		}
		return cent
	}
	w := workers(opt.Workers)
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x9e3779b97f4a7c15))
	row := func(p []float32, i int) []float32 { return p[i*dim : (i+1)*dim] }

	// k-means++ on a random subset.
	perm := rng.Perm(n)
	initN := min(n, 16*k)
	sub := make([]float32, initN*dim)
	for i := range initN {
		copy(row(sub, i), row(points, perm[i]))
	}
	minD := make([]float32, initN)
	first := rng.IntN(initN)
	copy(row(cent, 0), row(sub, first))
	parallelFor(w, initN, 1024, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			minD[i] = l2sq(row(sub, i), row(cent, 0))
		}
	})
	for c := 1; c < k; c++ {
		var total float64
		for _, d := range minD {
			total += float64(d)
		}
		pick := 0
		if total > 0 {
			r := rng.Float64() * total
			for i, d := range minD {
				r -= float64(d)
				if r <= 0 {
					pick = i
					break
				}
				pick = i
			}
		} else {
			pick = rng.IntN(initN)
		}
		copy(row(cent, c), row(sub, pick))
		cc := row(cent, c)
		parallelFor(w, initN, 1024, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if d := l2sq(row(sub, i), cc); d < minD[i] {
					minD[i] = d
				}
			}
		})
	}

	// Lloyd.
	iters := opt.Iterations
	if iters <= 0 {
		iters = 10
	}
	assign := make([]int32, n)
	for i := range assign {
		assign[i] = -1
	}
	dist := make([]float32, n)
	sums := make([]float64, k*dim)
	counts := make([]int, k)
	for range iters {
		as := newAssigner(cent, dim)
		var moved atomic.Int64
		parallelFor(w, n, 512, func(lo, hi int) {
			ch := int64(0)
			buf := make([]float32, k)
			for i := lo; i < hi; i++ {
				c, d := as.nearest(row(points, i), buf)
				if assign[i] != int32(c) {
					ch++
				}
				assign[i], dist[i] = int32(c), d
			}
			moved.Add(ch)
		})
		changed := int(moved.Load())
		clear(sums)
		clear(counts)
		for i := range n {
			c := int(assign[i])
			counts[c]++
			s := sums[c*dim : (c+1)*dim]
			for j, v := range row(points, i) {
				s[j] += float64(v)
			}
		}
		var far []int
		for c := range k {
			if counts[c] == 0 {
				if far == nil {
					far = make([]int, n)
					for i := range far {
						far[i] = i
					}
					slices.SortStableFunc(far, func(a, b int) int {
						switch {
						case dist[a] > dist[b]:
							return -1
						case dist[a] < dist[b]:
							return 1
						}
						return 0
					})
				}
				p := far[0]
				far = far[1:]
				copy(row(cent, c), row(points, p))
				dist[p] = 0
				changed++
				continue
			}
			inv := 1 / float64(counts[c])
			cc := row(cent, c)
			for j := range cc {
				cc[j] = float32(sums[c*dim+j] * inv)
			}
		}
		if changed == 0 {
			break
		}
	}
	return cent
}

func centroidNorms(cent []float32, dim int) []float32 {
	k := len(cent) / dim
	out := make([]float32, k)
	for c := range k {
		cc := cent[c*dim : (c+1)*dim]
		out[c] = vek32.Dot(cc, cc)
	}
	return out
}

// assigner finds nearest centroids in L2: argmin |c|² − 2x·c, the k
// products x·c in one SIMD matrix product with the transposed centroids.
type assigner struct {
	dim, k int
	cT     []float32 // dim × k
	norms  []float32
}

func newAssigner(cent []float32, dim int) *assigner {
	k := len(cent) / dim
	a := &assigner{dim: dim, k: k, cT: make([]float32, dim*k), norms: centroidNorms(cent, dim)}
	for c := range k {
		for j := range dim {
			a.cT[j*k+c] = cent[c*dim+j]
		}
	}
	return a
}

// scores writes |c|² − 2x·c of every centroid into buf (len k).
func (a *assigner) scores(x, buf []float32) {
	vek32.MatMul_Into(buf, x, a.cT, a.dim) // one row: runs on the calling goroutine
	vek32.MulNumber_Inplace(buf, -2)
	vek32.Add_Inplace(buf, a.norms)
}

// nearest is the nearest centroid to x and its squared distance; buf is
// scratch of len k.
func (a *assigner) nearest(x, buf []float32) (int, float32) {
	a.scores(x, buf)
	c := vek32.ArgMin(buf)
	d := buf[c] + vek32.Dot(x, x)
	if d < 0 {
		d = 0
	}
	return c, d
}
