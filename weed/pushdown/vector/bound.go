package vector

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Bound is the k-th smallest distance the searches of one query over
// several files have returned so far (+Inf until k rows were): a list
// every row of which is provably farther than it cannot change the
// query's top-K, so a search sharing the Bound skips it. Safe for
// concurrent use.
//
//	file A searched ─▶ Add(its hits) ─▶ Value() = k-th nearest so far
//	file B: list l ─▶ |q − c_l| − radius_l > Value()? ─▶ skipped, not scored
type Bound struct {
	k   int
	mu  sync.Mutex
	top []float32     // the k smallest distances added, ascending
	cur atomic.Uint32 // math.Float32bits of the k-th (+Inf until k)
}

// NewBound is the empty bound of a top-k query.
func NewBound(k int) *Bound {
	b := &Bound{k: max(1, k)}
	b.cur.Store(math.Float32bits(float32(math.Inf(1))))
	return b
}

// Add records the exact distances of a file's results (rows not added
// before).
func (b *Bound) Add(hits []Hit) {
	if b == nil || len(hits) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range hits {
		b.top = append(b.top, h.Dist)
	}
	slices.Sort(b.top)
	b.top = b.top[:min(len(b.top), b.k)]
	if len(b.top) == b.k {
		b.cur.Store(math.Float32bits(b.top[b.k-1]))
	}
}

// Value is the k-th smallest distance added (+Inf until k were; nil: +Inf).
func (b *Bound) Value() float32 {
	if b == nil {
		return float32(math.Inf(1))
	}
	return math.Float32frombits(b.cur.Load())
}

// boundSlack widens a lower bound by the float32 rounding of the
// distances it is compared with (relative, and absolute near zero), so a
// bound never exceeds a distance Exact computes.
const boundSlack = 1e-4

// listBounds are lower bounds of the distance from the query to any row
// of each list, from the query's distances to the centroids and the
// lists' radii; nil when the metric has none (cosine) or the radii are
// not known.
type listBounds struct {
	m     Metric
	qnorm float64 // |q| (dot)
	radii []float32
}

func newListBounds(q Query, pk *Packed) *listBounds {
	if pk == nil || len(pk.Radii) == 0 || (q.Metric != L2 && q.Metric != Dot) {
		return nil
	}
	return &listBounds{m: q.Metric, qnorm: math.Sqrt(float64(dot(q.Vector, q.Vector))), radii: pk.Radii}
}

// of is the lower bound of list l whose centroid is at distance dc (the
// metric's: squared L2, −q·c for dot). By the triangle inequality every
// row x of the list has |q − x| ≥ |q − c| − r, and by Cauchy-Schwarz
// −q·x ≥ −q·c − |q|·r.
func (lb *listBounds) of(l int, dc float32) float64 {
	r := float64(lb.radii[l])
	if math.IsInf(r, 0) || math.IsNaN(r) || math.IsInf(float64(dc), 0) {
		return math.Inf(-1) // a non-finite row or centroid: nothing is known
	}
	if lb.m == Dot {
		d := float64(dc) - lb.qnorm*r
		return d - boundSlack*(math.Abs(float64(dc))+lb.qnorm*r) - 1e-6
	}
	e := math.Sqrt(max(0, float64(dc)))
	d := e*(1-boundSlack) - r*(1+boundSlack) - 1e-6
	if d <= 0 {
		return 0
	}
	return d * d
}

// prunes reports whether a list of lower bound lo can hold no row nearer
// than the bound's value (strictly farther: a tie could still win by
// position).
func prunes(lo float64, b *Bound) bool {
	return b != nil && lo > float64(b.Value())
}

// LowerBound is a lower bound of the distance from q to any row of the
// file (the minimum over its lists; q.Centroids used when set), -Inf when
// none is known: no lists,
// no packed lists or radii (Pack, PackRadii), or the cosine metric. A file
// whose bound exceeds the Bound of the query's other files holds no row
// of its top-K.
func (ix *Index) LowerBound(pk *Packed, q Query) float64 {
	lbs := newListBounds(q, pk)
	if lbs == nil || ix.NList() == 0 || len(q.Vector) != ix.Dim || pk.Fits(ix) != nil {
		return math.Inf(-1)
	}
	ds := ix.centroidDistances(newScorer(q.Metric, q.Vector), q.Centroids)
	lo := math.Inf(1)
	for l, d := range ds {
		if len(ix.Lists[l]) > 0 {
			lo = min(lo, lbs.of(l, d))
		}
	}
	return lo
}
