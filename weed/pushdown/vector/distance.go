// Package vector is the arithmetic of vector search next to the data:
// distances (SIMD kernels of github.com/viterin/vek), a seeded k-means, product
// quantization, and the per-file IVF / IVF-PQ index with its masked top-K
// search. It is a pure library; sideindex stores the index as a payload and
// the volume service searches it.
//
//	file's vectors (Matrix: rows × dim, NULL / wrong-length rows invalid)
//	   │ Build: k-means++ (fixed seed) ─▶ centroids ─▶ posting lists of file positions
//	   │        ivf_pq: residuals to the coarse centroid ─▶ PQ codebooks (m × 256) ─▶ codes
//	   ▼
//	Search(query, k, nprobe, mask): nearest nprobe lists (widened until k rows pass the
//	   mask or the lists are exhausted) ─▶ exact distances (ivf) or PQ distances, then an
//	   exact re-rank of the best k × refine (ivf_pq) ─▶ top-K (position, distance)
//
// Distances are "smaller is nearer": L2 is the squared Euclidean distance,
// cosine is 1 − cos(q, x) (1 when either vector is zero), dot is −q·x.
package vector

import (
	"fmt"
	"math"

	"github.com/viterin/vek/vek32"
)

// Metric is a distance, numbered as pushdown_pb.VectorMetric.
type Metric int32

const (
	L2     Metric = 0
	Cosine Metric = 1
	Dot    Metric = 2
)

func (m Metric) String() string {
	switch m {
	case L2:
		return "l2"
	case Cosine:
		return "cosine"
	case Dot:
		return "dot"
	}
	return fmt.Sprintf("metric(%d)", int32(m))
}

// Valid reports whether m is a known metric.
func (m Metric) Valid() bool { return m == L2 || m == Cosine || m == Dot }

// scorer measures distances from one query.
type scorer struct {
	m     Metric
	q     []float32
	qnorm float32
}

func newScorer(m Metric, q []float32) scorer {
	s := scorer{m: m, q: q}
	if m == Cosine {
		s.qnorm = vek32.Norm(q)
	}
	return s
}

// dist is the distance from the query to x (len(x) == len(q) > 0); NaN
// (from NaN or infinite elements) is +Inf so ordering stays total.
func (s scorer) dist(x []float32) float32 {
	var d float32
	switch s.m {
	case L2:
		e := vek32.Distance(s.q, x)
		d = e * e
	case Cosine:
		nx := vek32.Norm(x)
		if nx == 0 || s.qnorm == 0 {
			d = 1
		} else {
			d = 1 - vek32.Dot(s.q, x)/(s.qnorm*nx)
		}
	default:
		d = -vek32.Dot(s.q, x)
	}
	if d != d {
		return float32(math.Inf(1))
	}
	return d
}

// Distance is the distance between q and x under m; the lengths must be
// equal and positive.
func Distance(m Metric, q, x []float32) (float32, error) {
	if len(q) == 0 || len(q) != len(x) {
		return 0, fmt.Errorf("vectors of %d and %d dimensions cannot be compared", len(q), len(x))
	}
	if !m.Valid() {
		return 0, fmt.Errorf("unknown vector metric %d", int32(m))
	}
	return newScorer(m, q).dist(x), nil
}

// l2sq is the squared Euclidean distance (training and encoding).
func l2sq(a, b []float32) float32 {
	e := vek32.Distance(a, b)
	return e * e
}

func dot(a, b []float32) float32 { return vek32.Dot(a, b) }
