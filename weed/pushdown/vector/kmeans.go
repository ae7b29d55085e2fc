package vector

import (
	"math"
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
	// |x − c|² = |x|² + |c|² − 2x·c, the products of a block of points
	// with the new centroid in one SIMD matrix-vector product (blocks of
	// fewer than 100,000 values, which vek multiplies on the calling
	// goroutine).
	minD := make([]float32, initN)
	subNorms := make([]float32, initN)
	for i := range initN {
		subNorms[i] = vek32.Dot(row(sub, i), row(sub, i))
	}
	seedBlock := max(1, min(1024, 99_999/dim))
	distTo := func(cc []float32, update bool) {
		cn := vek32.Dot(cc, cc)
		parallelFor(w, initN, seedBlock, func(lo, hi int) {
			buf := make([]float32, hi-lo)
			vek32.MatMul_Into(buf, sub[lo*dim:hi*dim], cc, dim)
			for i := lo; i < hi; i++ {
				d := max(0, subNorms[i]+cn-2*buf[i-lo])
				if !update || d < minD[i] {
					minD[i] = d
				}
			}
		})
	}
	first := rng.IntN(initN)
	copy(row(cent, 0), row(sub, first))
	distTo(row(cent, 0), false)
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
		distTo(row(cent, c), true)
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
			next := make([]int32, hi-lo)
			as.nearestBlock(func(i int) []float32 { return row(points, i) }, lo, hi, next, dist[lo:hi], buf)
			for i, c := range next {
				if assign[lo+i] != c {
					ch++
				}
				assign[lo+i] = c
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

// assigner finds nearest centroids in L2: argmin |c|² − 2x·c, the
// products x·c by SIMD matrix products with the transposed centroids.
// The centroids are cut into column chunks of about assignChunkBytes, so
// that scoring a block of points against one chunk reads it from the
// core's own cache: one point at a time against all k centroids streams
// the whole matrix (k × dim floats, 512 KiB at 2048 × 64) from shared
// memory per point, and two cores then wait on the same memory instead
// of computing.
type assigner struct {
	dim, k int
	chunks []assignChunk
}

// assignChunk is centroids first … first+n−1: −2·cᵀ (dim × n) and |c|².
type assignChunk struct {
	first int
	cT    []float32
	norms []float32
}

// assignChunkBytes bounds one chunk of transposed centroids (a share of a
// core's L2 cache); assignBlockBytes bounds the block of points scored
// against it in turn.
const (
	assignChunkBytes = 128 << 10
	assignBlockBytes = 64 << 10
)

func newAssigner(cent []float32, dim int) *assigner {
	k := len(cent) / dim
	a := &assigner{dim: dim, k: k}
	norms := centroidNorms(cent, dim)
	per := max(8, assignChunkBytes/(4*dim)/8*8)
	for first := 0; first < k; first += per {
		n := min(per, k-first)
		ch := assignChunk{first: first, cT: make([]float32, dim*n), norms: norms[first : first+n]}
		for c := range n {
			for j := range dim {
				ch.cT[j*n+c] = -2 * cent[(first+c)*dim+j]
			}
		}
		a.chunks = append(a.chunks, ch)
	}
	return a
}

// score writes |c|² − 2x·c of the chunk's centroids into buf[:n].
func (ch *assignChunk) score(x, buf []float32, dim int) []float32 {
	buf = buf[:len(ch.norms)]
	vek32.MatMul_Into(buf, x, ch.cT, dim) // one row: runs on the calling goroutine
	vek32.Add_Inplace(buf, ch.norms)
	return buf
}

// scores writes |c|² − 2x·c of every centroid into buf (len k).
func (a *assigner) scores(x, buf []float32) {
	for i := range a.chunks {
		ch := &a.chunks[i]
		ch.score(x, buf[ch.first:], a.dim)
	}
}

// nearest is the nearest centroid to x and its squared distance; buf is
// scratch of len k.
func (a *assigner) nearest(x, buf []float32) (int, float32) {
	var c [1]int32
	var d [1]float32
	a.nearestBlock(func(int) []float32 { return x }, 0, 1, c[:], d[:], buf)
	return int(c[0]), d[0]
}

// nearestBlock writes the nearest centroid of rows lo … hi−1 (row(i) is
// the point) and its squared distance into assign[i−lo] and dist[i−lo],
// a block of points per chunk of centroids; ties go to the lower
// centroid. buf is scratch of len k.
func (a *assigner) nearestBlock(row func(int) []float32, lo, hi int, assign []int32, dist []float32, buf []float32) {
	block := max(1, assignBlockBytes/(4*a.dim))
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		best := dist[b-lo : e-lo]
		for i := range best {
			best[i] = float32(math.Inf(1))
		}
		for ci := range a.chunks {
			ch := &a.chunks[ci]
			for i := b; i < e; i++ {
				sc := ch.score(row(i), buf, a.dim)
				j := vek32.ArgMin(sc)
				if sc[j] < best[i-b] || ci == 0 {
					best[i-b], assign[i-lo] = sc[j], int32(ch.first+j)
				}
			}
		}
		for i := b; i < e; i++ {
			x := row(i)
			if d := best[i-b] + vek32.Dot(x, x); d > 0 {
				best[i-b] = d
			} else {
				best[i-b] = 0
			}
		}
	}
}
