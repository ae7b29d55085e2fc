package vector

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/viterin/vek/vek32"
)

// Matrix is the vectors of one data file, one row per file position.
type Matrix struct {
	Dim  int
	Data []float32 // rows × Dim; an invalid row is zeros
	// Valid is false where the row's vector is NULL or has a length other
	// than Dim: such a row is never returned.
	Valid []bool
}

// Rows is the number of file positions.
func (m *Matrix) Rows() int64 { return int64(len(m.Valid)) }

// Row is the vector at file position i.
func (m *Matrix) Row(i int64) []float32 { return m.Data[i*int64(m.Dim) : (i+1)*int64(m.Dim)] }

// Bytes is the memory the matrix holds.
func (m *Matrix) Bytes() int64 { return int64(len(m.Data))*4 + int64(len(m.Valid)) + 64 }

// Index is the IVF index of one data file. With no lists (NList() == 0)
// the file is too small for an index and is searched exactly.
type Index struct {
	Dim       int
	Rows      int64     // file positions the index covers
	Centroids []float32 // NList × Dim
	Lists     [][]int64 // file positions of each list, ascending
	// ivf_pq: residuals (x − centroid) quantized by PQ; Codes[l] holds
	// len(Lists[l]) × PQ.M codes, Norms[l] the rows' |x| (for dot and cosine).
	PQ    *PQ
	Codes [][]byte
	Norms [][]float32

	xhatOnce sync.Once
	xhat     [][]float32 // ivf_pq: |c + r̂|² of each row (its reconstruction's squared norm)
}

// reconNorms are the squared norms of the rows' PQ reconstructions
// (centroid + decoded residual), list by list, computed once: with them
// |q − x̂|² = |q|² − 2(q·c + Σ_j table[j][code_j]) + |x̂|², the ADC
// distance from one table per query.
func (ix *Index) reconNorms() [][]float32 {
	ix.xhatOnce.Do(func() {
		if ix.PQ == nil {
			return
		}
		ix.xhat = make([][]float32, len(ix.Lists))
		x := make([]float32, ix.Dim)
		m := ix.PQ.M
		for l := range ix.Lists {
			cc := ix.Centroids[l*ix.Dim : (l+1)*ix.Dim]
			ix.xhat[l] = make([]float32, len(ix.Lists[l]))
			for i := range ix.Lists[l] {
				ix.PQ.Decode(ix.Codes[l][i*m:(i+1)*m], x)
				vek32.Add_Inplace(x, cc)
				ix.xhat[l][i] = dot(x, x)
			}
		}
	})
	return ix.xhat
}

// NList is the number of lists (centroids).
func (ix *Index) NList() int { return len(ix.Lists) }

// Bytes is the memory the index holds.
func (ix *Index) Bytes() int64 {
	b := int64(len(ix.Centroids))*4 + 128
	for l := range ix.Lists {
		b += int64(len(ix.Lists[l]))*8 + 24
	}
	for l := range ix.Codes {
		b += int64(len(ix.Codes[l])) + int64(len(ix.Norms[l]))*8 + 72 // codes, norms and reconNorms
	}
	if ix.PQ != nil {
		b += int64(len(ix.PQ.Codebooks)) * 4
	}
	return b
}

// MinPointsPerList is how many training points every list keeps at least:
// the centroid count is capped by rows / MinPointsPerList.
const MinPointsPerList = 39

// DefaultMinRows is the row count below which a file gets no lists and is
// searched exactly.
const DefaultMinRows = 1000

// CentroidCount is 2^ceil(log2(4·sqrt(rows))), halved until every list
// keeps MinPointsPerList points; 0 for no rows.
func CentroidCount(rows int64) int {
	if rows <= 0 {
		return 0
	}
	c := 1 << bits.Len64(uint64(math.Ceil(4*math.Sqrt(float64(rows))))-1)
	if float64(c) < 4*math.Sqrt(float64(rows)) {
		c <<= 1
	}
	for c > 1 && int64(c)*MinPointsPerList > rows {
		c >>= 1
	}
	return c
}

// DefaultNProbe is the lists probed when a query names none: one in
// thirty-two, at least sixteen (every list of an index of fewer). Small
// indexes cut a latent cluster into few lists, large ones into many whose
// neighbours the probe must reach: one in sixteen scored 6% of a large
// file's rows where 3% keeps recall@10 at 0.97 or more on Fashion-MNIST
// (60,000 rows, 1024 lists) and the tests' clustered data; eight of 256
// lists lost neighbours (recall@10 0.87 on 12,000 rows).
func DefaultNProbe(nlist int) int { return max(min(nlist, 16), (nlist+31)/32) }

// DefaultMinScored is the vectors a search with the default nprobe scores
// at least (all of a file holding fewer). A small file's lists hold few
// rows each: one in thirty-two of them scored 625 of a 10,000-row
// tenant's vectors and lost neighbours (recall@10 0.67 over 20 such files
// of the tenant-partitioned demo, whose tenants sit in three tight
// clusters); large files already score more.
const DefaultMinScored = 4096

// defaultNProbeOf is DefaultNProbe, raised until the lists probed hold
// DefaultMinScored rows on average.
func defaultNProbeOf(nlist int, rows int64) int {
	n := DefaultNProbe(nlist)
	if rows > 0 {
		n = max(n, int((DefaultMinScored*int64(nlist)+rows-1)/rows))
	}
	return min(n, nlist)
}

// NearFactor bounds the lists an unmasked L2 search at the default nprobe
// probes past DefaultNProbe to reach DefaultMinScored rows: it stops at
// the first list whose centroid is farther from the query than NearFactor
// times the k-th nearest distance found so far (squared). The floor is
// for tight clusters, where dozens of centroids sit about as far from
// the query as its k-th neighbour (the 64th nearest at 1.17× it in the
// tests' tight blobs, 10,000 × 64): there the search still goes on to the
// floor. On Fashion-MNIST the 16th nearest centroid is already 1.5× (a
// label's 6,000 rows) to 2.5× (15,000 rows) farther, and the floor's extra
// lists (70% of a 6,000-row file) found no neighbour the first sixteen
// missed (recall@10 0.99 either way).
const NearFactor = 1.25

// probeStop ends the floor's widening of an unmasked L2 search at the
// default nprobe (see NearFactor): after the first `after` lists, the
// search stops at a list whose centroid is farther than NearFactor × the
// k-th nearest distance offered so far. after 0: never.
type probeStop struct {
	after int
	kth   topK
}

func newProbeStop(ix *Index, q Query) *probeStop {
	if q.NProbe != 0 || q.Mask != nil || q.Metric != L2 {
		return &probeStop{}
	}
	return &probeStop{after: DefaultNProbe(ix.NList()), kth: topK{k: q.K, hits: make([]Hit, 0, q.K)}}
}

// offer records a distance found (a candidate kept).
func (ps *probeStop) offer(h Hit) {
	if ps.after > 0 {
		ps.kth.offer(h)
	}
}

// stops reports whether the list at centroid distance dc, after lists
// were probed or pruned, is not worth probing.
func (ps *probeStop) stops(lists int, dc float32) bool {
	return ps.after > 0 && lists >= ps.after && len(ps.kth.hits) == ps.kth.k && float64(dc) > NearFactor*float64(ps.kth.hits[0].Dist)
}

// pqVisitFloats is what an ivf_pq search's visit of one list position
// costs under a mask, in float32s an exact scan reads in the same time.
const pqVisitFloats = 16

// DefaultRefine is the re-rank factor of ivf_pq: the best k × DefaultRefine
// PQ candidates are re-scored exactly.
const DefaultRefine = 16

// BuildOptions tune Build.
type BuildOptions struct {
	NList      int   // 0: CentroidCount(valid rows)
	PQ         bool  // quantize residuals (ivf_pq)
	M          int   // PQ subspaces; 0: DefaultSubspaces(dim)
	MinRows    int64 // fewer valid rows: no lists; 0: DefaultMinRows
	Seed       int64
	Workers    int // 0: every core
	Iterations int // k-means iterations; 0: 10
}

// Build trains the index of mat.
func Build(mat *Matrix, opt BuildOptions) (*Index, error) {
	if mat.Dim <= 0 || int64(len(mat.Data)) != mat.Rows()*int64(mat.Dim) {
		return nil, fmt.Errorf("vector matrix of %d values is not %d rows of %d dimensions", len(mat.Data), mat.Rows(), mat.Dim)
	}
	ix := &Index{Dim: mat.Dim, Rows: mat.Rows()}
	var valid []int64
	for i, ok := range mat.Valid {
		if ok {
			valid = append(valid, int64(i))
		}
	}
	minRows := opt.MinRows
	if minRows <= 0 {
		minRows = DefaultMinRows
	}
	if int64(len(valid)) < minRows {
		return ix, nil
	}
	nlist := opt.NList
	if nlist <= 0 {
		nlist = CentroidCount(int64(len(valid)))
	}
	if nlist > len(valid) {
		return nil, fmt.Errorf("%d lists need at least as many vectors, the file has %d", nlist, len(valid))
	}
	w := workers(opt.Workers)
	dim := mat.Dim
	rng := rand.New(rand.NewPCG(uint64(opt.Seed), 0x243f6a8885a308d3))
	order := slices.Clone(valid)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	trainN := min(len(order), 32*nlist)
	train := make([]float32, trainN*dim)
	for i := range trainN {
		copy(train[i*dim:(i+1)*dim], mat.Row(order[i]))
	}
	km := KMeansOptions{K: nlist, Iterations: opt.Iterations, Seed: opt.Seed, Workers: w}
	ix.Centroids = KMeans(train, dim, km)
	as := newAssigner(ix.Centroids, dim)
	assign := make([]int32, len(valid))
	parallelFor(w, len(valid), 512, func(lo, hi int) {
		buf := make([]float32, nlist)
		dist := make([]float32, hi-lo)
		as.nearestBlock(func(i int) []float32 { return mat.Row(valid[i]) }, lo, hi, assign[lo:hi], dist, buf)
	})
	ix.Lists = make([][]int64, nlist)
	for i, p := range valid {
		ix.Lists[assign[i]] = append(ix.Lists[assign[i]], p)
	}
	if !opt.PQ {
		return ix, nil
	}
	m := opt.M
	if m <= 0 {
		m = DefaultSubspaces(dim)
	}
	pqN := min(trainN, 32*PQCentroids)
	res := make([]float32, pqN*dim)
	buf := make([]float32, nlist)
	for i := range pqN {
		x := mat.Row(order[i])
		c, _ := as.nearest(x, buf)
		cc := ix.Centroids[c*dim : (c+1)*dim]
		r := res[i*dim : (i+1)*dim]
		for j := range r {
			r[j] = x[j] - cc[j]
		}
	}
	km.Seed = opt.Seed + 7919
	pq, err := TrainPQ(res, dim, m, km)
	if err != nil {
		return nil, err
	}
	ix.PQ = pq
	ix.Codes = make([][]byte, nlist)
	ix.Norms = make([][]float32, nlist)
	for l := range ix.Lists {
		ix.Codes[l] = make([]byte, len(ix.Lists[l])*m)
		ix.Norms[l] = make([]float32, len(ix.Lists[l]))
	}
	parallelFor(w, nlist, 1, func(lo, hi int) {
		r := make([]float32, dim)
		sc := make([]float32, PQCentroids)
		for l := lo; l < hi; l++ {
			cc := ix.Centroids[l*dim : (l+1)*dim]
			for i, p := range ix.Lists[l] {
				x := mat.Row(p)
				for j := range r {
					r[j] = x[j] - cc[j]
				}
				pq.encode(r, ix.Codes[l][i*m:(i+1)*m], sc)
				ix.Norms[l][i] = float32(math.Sqrt(float64(dot(x, x))))
			}
		}
	})
	return ix, nil
}

// MaxK bounds the results of one search.
const MaxK = 10000

// Query is one search of one file.
type Query struct {
	Vector []float32
	K      int
	NProbe int // lists probed at least; 0: DefaultNProbe, raised to score DefaultMinScored rows (unmasked L2: while lists are near, NearFactor)
	Refine int // ivf_pq re-rank factor; 0: DefaultRefine
	Metric Metric
	// Mask, when set, holds the only file positions that may be returned
	// (rows surviving the scalar predicate and not deleted).
	Mask *roaring64.Bitmap
	// Bound, when set, is shared by the searches of the query's other
	// files: an ivf search with packed lists skips a list whose rows are
	// all provably farther than its value (the query's top-K over the
	// files is unchanged; the lists visited are the same, a skipped list
	// counts as probed for nprobe and the rows to score).
	Bound *Bound
	// Centroids, when set, are the query's distances to the index's
	// centroids (CentroidDistances), not computed again.
	Centroids []float32
}

// Hit is one result: a file position and its distance.
type Hit struct {
	Pos  int64
	Dist float32
}

// Stats say what a search did.
type Stats struct {
	Scored int64 // exact distance computations
	Approx int64 // PQ distance computations
	Probed int   // lists probed
	Pruned int   // lists skipped: no row nearer than the Bound
	Exact  bool  // searched exactly (no lists, or few candidate rows)
}

// ErrDimension is returned (wrapped) when the query and the column differ
// in dimension.
var ErrDimension = errors.New("vector dimension mismatch")

func (q Query) check(dim int) error {
	switch {
	case len(q.Vector) != dim:
		return fmt.Errorf("%w: the query vector has %d dimensions, the column's vectors have %d", ErrDimension, len(q.Vector), dim)
	case q.K <= 0 || q.K > MaxK:
		return fmt.Errorf("k = %d: want 1 to %d results", q.K, MaxK)
	case !q.Metric.Valid():
		return fmt.Errorf("unknown vector metric %d", int32(q.Metric))
	case q.NProbe < 0 || q.Refine < 0:
		return fmt.Errorf("nprobe %d and refine %d must not be negative", q.NProbe, q.Refine)
	}
	for i, v := range q.Vector {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("query vector element %d is not a finite number", i)
		}
	}
	return nil
}

// Exact is the exact top-K of the valid rows of mat that pass the mask,
// nearest first, ties by position.
func Exact(mat *Matrix, q Query) ([]Hit, Stats, error) {
	if err := q.check(mat.Dim); err != nil {
		return nil, Stats{}, err
	}
	sc := newScorer(q.Metric, q.Vector)
	h := &topK{k: q.K}
	st := Stats{Exact: true}
	visit := func(p int64) {
		if p < mat.Rows() && mat.Valid[p] {
			h.offer(Hit{p, sc.dist(mat.Row(p))})
			st.Scored++
		}
	}
	if q.Mask != nil {
		it := q.Mask.Iterator()
		for it.HasNext() {
			p := it.Next()
			if p >= uint64(mat.Rows()) {
				break
			}
			visit(int64(p))
		}
	} else {
		for p := range mat.Rows() {
			visit(p)
		}
	}
	return h.sorted(), st, nil
}

// Packed is the vectors of an index's lists stored list by list (the
// IVF-flat layout) with their squared norms: a probed list is read from
// contiguous memory and scored by SIMD matrix-vector products, instead of
// one fetch of a row scattered over the file's matrix per position (the
// fetches, not the arithmetic, were most of an ivf search).
type Packed struct {
	Dim   int
	Data  [][]float32 // list l: len(Lists[l]) × Dim, in list order
	Norms [][]float32 // |x|² of each row
	Radii []float32   // list l: the largest |x − centroid| of its rows, rounded up (+Inf: a row not finite)
	// AllValid: every row of the lists is valid in the matrix packed.
	AllValid bool
}

// Bytes is the memory the packed lists hold.
func (pk *Packed) Bytes() int64 {
	b := int64(64)
	for l := range pk.Data {
		b += int64(len(pk.Data[l]))*4 + int64(len(pk.Norms[l]))*4 + 48
	}
	return b + int64(len(pk.Radii))*4
}

// Fits checks that pk is the packing of ix (Pack, or PackRadii for
// ivf_pq): a list for each of its lists, of its lists' lengths. Packed
// lists cached for another payload of the same file must not be searched
// with this one (their slices would be indexed out of range).
func (pk *Packed) Fits(ix *Index) error {
	fail := func(what string) error {
		return fmt.Errorf("packed lists of %d dimensions and %d lists do not belong to an index of %d and %d lists: %s", pk.Dim, len(pk.Radii), ix.Dim, ix.NList(), what)
	}
	if pk.Dim != ix.Dim || len(pk.Radii) != ix.NList() {
		return fail("another shape")
	}
	if ix.PQ != nil {
		return nil // radii only
	}
	if len(pk.Data) != ix.NList() || len(pk.Norms) != ix.NList() {
		return fail("another list count")
	}
	for l, ps := range ix.Lists {
		if len(pk.Data[l]) != len(ps)*ix.Dim || len(pk.Norms[l]) != len(ps) {
			return fail(fmt.Sprintf("list %d holds %d rows, not %d", l, len(pk.Norms[l]), len(ps)))
		}
	}
	return nil
}

// Pack copies the rows of mat (the vectors the index was built from) into
// the lists' layout.
func (ix *Index) Pack(mat *Matrix) (*Packed, error) {
	if err := ix.fits(mat); err != nil {
		return nil, err
	}
	pk := &Packed{Dim: ix.Dim, Data: make([][]float32, ix.NList()), Norms: make([][]float32, ix.NList()), Radii: make([]float32, ix.NList()), AllValid: true}
	for l, ps := range ix.Lists {
		for _, p := range ps {
			pk.AllValid = pk.AllValid && p >= 0 && p < mat.Rows() && mat.Valid[p]
		}
		pk.Data[l], pk.Norms[l] = gather(mat, ps, nil, nil)
		pk.Radii[l] = radius(ix.Centroids[l*ix.Dim:(l+1)*ix.Dim], pk.Data[l])
	}
	return pk, nil
}

// PackRadii is the lists' radii of an ivf_pq index (a Packed without the
// vectors: its search reads codes, and the radii let it and the batch skip
// lists and files farther than the Bound).
func (ix *Index) PackRadii(mat *Matrix) (*Packed, error) {
	if err := ix.fits(mat); err != nil {
		return nil, err
	}
	pk := &Packed{Dim: ix.Dim, Radii: make([]float32, ix.NList()), AllValid: true}
	var data, norms []float32
	for l, ps := range ix.Lists {
		for _, p := range ps {
			pk.AllValid = pk.AllValid && p >= 0 && p < mat.Rows() && mat.Valid[p]
		}
		data, norms = gather(mat, ps, data, norms)
		pk.Radii[l] = radius(ix.Centroids[l*ix.Dim:(l+1)*ix.Dim], data)
	}
	return pk, nil
}

// radius is the largest Euclidean distance from c to the rows of data
// (computed in float64 and rounded up to float32; +Inf when a distance is
// not finite).
func radius(c, data []float32) float32 {
	r := 0.0
	for i := 0; i+len(c) <= len(data); i += len(c) {
		s := 0.0
		for j, x := range data[i : i+len(c)] {
			d := float64(x) - float64(c[j])
			s += d * d
		}
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return float32(math.Inf(1))
		}
		r = max(r, math.Sqrt(s))
	}
	f := float32(r)
	if float64(f) < r {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// gather copies the rows ps of mat into data and their squared norms into
// norms (reusing the slices' capacity).
func gather(mat *Matrix, ps []int64, data, norms []float32) ([]float32, []float32) {
	data, norms = slices.Grow(data[:0], len(ps)*mat.Dim)[:len(ps)*mat.Dim], slices.Grow(norms[:0], len(ps))[:len(ps)]
	for i, p := range ps {
		r := data[i*mat.Dim : (i+1)*mat.Dim]
		copy(r, mat.Row(p))
		norms[i] = dot(r, r)
	}
	return data, norms
}

func (ix *Index) fits(mat *Matrix) error {
	if mat.Dim != ix.Dim || mat.Rows() != ix.Rows {
		return fmt.Errorf("the index covers %d rows of %d dimensions, the vectors are %d rows of %d", ix.Rows, ix.Dim, mat.Rows(), mat.Dim)
	}
	return nil
}

// Search is SearchPacked without packed lists (rows are gathered from
// mat list by list).
func (ix *Index) Search(mat *Matrix, q Query) ([]Hit, Stats, error) {
	return ix.SearchPacked(mat, nil, q)
}

// SearchPacked is the approximate top-K of mat (the vectors the index was
// built from): the nearest NProbe lists, widened until K rows pass the
// mask or every list is probed (so K rows come back whenever K rows
// match). ivf scores the lists' rows (from pk when given, which must be
// ix.Pack(mat)) by |x|² + |q|² − 2q·x, then re-scores the best 2K exactly;
// ivf_pq scores them by PQ and re-ranks the best K × Refine exactly. A
// file without lists, or a mask of at most K × Refine rows, is searched
// exactly.
func (ix *Index) SearchPacked(mat *Matrix, pk *Packed, q Query) ([]Hit, Stats, error) {
	if err := q.check(ix.Dim); err != nil {
		return nil, Stats{}, err
	}
	if err := ix.fits(mat); err != nil {
		return nil, Stats{}, err
	}
	if pk != nil {
		if err := pk.Fits(ix); err != nil {
			return nil, Stats{}, err
		}
	}
	refine := q.Refine
	if refine == 0 {
		refine = DefaultRefine
	}
	nprobe := q.NProbe
	if nprobe == 0 {
		nprobe = defaultNProbeOf(ix.NList(), ix.Rows)
	}
	// Under a mask of m rows: when m is no more than the rows an unmasked
	// search would score (or k × refine), scanning it exactly costs no
	// more and misses nothing. Otherwise probing goes on until as many
	// masked rows were scored as an unmasked search scores (nprobe lists'
	// share of all rows): nprobe widened by 1/selectivity, the post-filter
	// overscan. Stopping at the same share of the masked rows instead
	// (nprobe lists' share of m) loses recall when the mask and the
	// vectors are correlated — a label filter whose rows sit in lists far
	// from the query (recall@10 0.92 on Fashion-MNIST, label = 3).
	//
	// ivf_pq scans exactly only the masks an exact scan costs less for: it
	// reads m × Dim floats, the PQ pass a mask test per position of the
	// probed lists and M code bytes per passing row (pqVisitFloats per
	// position, measured), then re-ranks k × refine. On Fashion-MNIST
	// (784-d) that is a mask of at most a 50th of the file's rows; a mask
	// below the unmasked share is then PQ-scored whole (every list probed,
	// nothing lost to the probe).
	want := q.K
	if q.Mask != nil && ix.NList() > 0 {
		m := int64(q.Mask.GetCardinality())
		unmasked := ix.Rows * int64(nprobe) / int64(ix.NList())
		exactUpTo := max(int64(q.K*refine), unmasked)
		if ix.PQ != nil {
			exactUpTo = max(int64(q.K*refine), min(unmasked, ix.Rows*pqVisitFloats/int64(ix.Dim)))
		}
		if m <= exactUpTo {
			return Exact(mat, q)
		}
		want = int(max(int64(q.K), unmasked))
	}
	if ix.NList() == 0 {
		return Exact(mat, q)
	}
	sc := newScorer(q.Metric, q.Vector)
	order := ix.probeOrder(ix.centroidDistances(sc, q.Centroids))
	pass := func(p int64) bool { return mat.Valid[p] }
	if q.Mask != nil {
		// The mask as a bitset over the file's positions: a probe tests
		// every position of its lists, and a roaring Contains (a binary
		// search in a container) was most of a masked ivf_pq search.
		bs := maskBits.Get().(*[]uint64)
		defer maskBits.Put(bs)
		bits := slices.Grow((*bs)[:0], int(ix.Rows+63)/64)[:(ix.Rows+63)/64]
		clear(bits)
		*bs = bits
		it := q.Mask.ManyIterator()
		buf := make([]uint64, 256)
		for n := it.NextMany(buf); n > 0; n = it.NextMany(buf) {
			for _, p := range buf[:n] {
				if p < uint64(ix.Rows) {
					bits[p>>6] |= 1 << (p & 63)
				}
			}
		}
		pass = func(p int64) bool { return bits[p>>6]&(1<<(p&63)) != 0 && mat.Valid[p] }
	}
	if ix.PQ == nil {
		return ix.searchFlat(mat, pk, q, sc, order, nprobe, want, pass)
	}
	return ix.searchPQ(mat, pk, q, sc, order, nprobe, want, refine, pass)
}

// flatBlockRows bounds the rows of one matrix-vector product: vek
// multiplies fewer than 100,000 values on the calling goroutine.
func flatBlockRows(dim int) int { return max(1, 99_999/dim) }

// searchFlat scores the rows of the probed lists by their dot products
// with the query (a block of a list per SIMD product when nothing is
// masked, one product per passing row otherwise), keeps the best 2K and
// re-scores those exactly, so the distances returned are those Exact
// computes.
func (ix *Index) searchFlat(mat *Matrix, pk *Packed, q Query, sc scorer, order iter.Seq2[int, float32], nprobe, want int, pass func(int64) bool) ([]Hit, Stats, error) {
	var st Stats
	dim := ix.Dim
	qq := dot(q.Vector, q.Vector)
	fromDot := func(d, n2 float32) float32 {
		var s float32
		switch q.Metric {
		case L2:
			s = max(0, n2+qq-2*d)
		case Dot:
			s = -d
		default:
			if n2 == 0 || sc.qnorm == 0 {
				s = 1
			} else {
				s = 1 - d/(sc.qnorm*float32(math.Sqrt(float64(n2))))
			}
		}
		if s != s {
			return float32(math.Inf(1))
		}
		return s
	}
	cand := &topK{k: 2 * q.K}
	block := flatBlockRows(dim)
	dots := make([]float32, block)
	var data, norms []float32
	var lbs *listBounds
	if q.Bound != nil {
		lbs = newListBounds(q, pk)
	}
	covered := 0 // rows scored, and rows of skipped lists that would have been
	stop := newProbeStop(ix, q)
	for l, dc := range order {
		if st.Probed+st.Pruned >= nprobe && covered >= want || covered >= want && stop.stops(st.Probed+st.Pruned, dc) {
			break
		}
		ps := ix.Lists[l]
		if lbs != nil && prunes(lbs.of(l, dc), q.Bound) {
			st.Pruned++
			if q.Mask == nil && pk.AllValid {
				covered += len(ps)
				continue
			}
			for _, p := range ps {
				if pass(p) {
					covered++
				}
			}
			continue
		}
		st.Probed++
		before := st.Scored
		if pk != nil {
			data, norms = pk.Data[l], pk.Norms[l]
		} else {
			data, norms = gather(mat, ps, data, norms)
		}
		if q.Mask == nil && pk != nil && pk.AllValid {
			// Every row is valid: a row no nearer than the worst kept
			// candidate is dropped without reading its position.
			for lo := 0; lo < len(ps); lo += block {
				hi := min(len(ps), lo+block)
				ds := vek32.MatMul_Into(dots, data[lo*dim:hi*dim], q.Vector, dim)
				for i, d := range ds {
					s := fromDot(d, norms[lo+i])
					if len(cand.hits) == cand.k && s > cand.hits[0].Dist {
						continue
					}
					cand.offer(Hit{ps[lo+i], s})
					stop.offer(Hit{ps[lo+i], s})
				}
				st.Scored += int64(len(ds))
			}
			covered += int(st.Scored - before)
			continue
		}
		if q.Mask == nil {
			for lo := 0; lo < len(ps); lo += block {
				hi := min(len(ps), lo+block)
				ds := vek32.MatMul_Into(dots, data[lo*dim:hi*dim], q.Vector, dim)
				for i, d := range ds {
					if p := ps[lo+i]; mat.Valid[p] {
						h := Hit{p, fromDot(d, norms[lo+i])}
						cand.offer(h)
						stop.offer(h)
						st.Scored++
					}
				}
			}
			covered += int(st.Scored - before)
			continue
		}
		for i, p := range ps {
			if pass(p) {
				cand.offer(Hit{p, fromDot(dot(data[i*dim:(i+1)*dim], q.Vector), norms[i])})
				st.Scored++
			}
		}
		covered += int(st.Scored - before)
	}
	h := &topK{k: q.K}
	for _, c := range cand.hits {
		h.offer(Hit{c.Pos, sc.dist(mat.Row(c.Pos))})
	}
	return h.sorted(), st, nil
}

// CentroidDistances are the distances from q to the index's centroids,
// list by list (what a search probes by; pass them in Query.Centroids).
func (ix *Index) CentroidDistances(q Query) []float32 {
	if len(q.Vector) != ix.Dim {
		return nil
	}
	return ix.centroidDistances(newScorer(q.Metric, q.Vector), nil)
}

// centroidDistances are the known distances when there is one per list,
// else computed.
func (ix *Index) centroidDistances(sc scorer, known []float32) []float32 {
	if len(known) == ix.NList() {
		return known
	}
	ds := make([]float32, ix.NList())
	for l := range ds {
		ds[l] = sc.dist(ix.Centroids[l*ix.Dim : (l+1)*ix.Dim])
	}
	return ds
}

// probeOrder yields the lists by the query's distance to their centroid,
// ties by list number: a heap built in linear time and popped as far as
// the search goes (nprobe lists of thousands, not a full sort). The heap
// is typed (container/heap boxed every popped item and called Less
// through an interface: a tenth of a small-list search).
func (ix *Index) probeOrder(dists []float32) iter.Seq2[int, float32] {
	h := make(probeHeap, ix.NList())
	for l := range h {
		h[l] = probeItem{dists[l], l}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return func(yield func(int, float32) bool) {
		for len(h) > 0 {
			it := h[0]
			n := len(h) - 1
			h[0] = h[n]
			h = h[:n]
			h.down(0)
			if !yield(it.l, it.d) {
				return
			}
		}
	}
}

type probeItem struct {
	d float32
	l int
}

func (a probeItem) before(b probeItem) bool { return a.d < b.d || (a.d == b.d && a.l < b.l) }

// probeHeap is a binary min-heap of lists by (distance, list).
type probeHeap []probeItem

func (h probeHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// topK keeps the k nearest hits (a max-heap on (distance, position)),
// sifted in place: container/heap's interface calls (Less, Swap, Push
// boxing each hit) were a fifth of an ivf_pq search's candidate keeping.
type topK struct {
	k    int
	hits []Hit
}

func worse(a, b Hit) bool { return a.Dist > b.Dist || (a.Dist == b.Dist && a.Pos > b.Pos) }

func (h *topK) offer(x Hit) {
	if len(h.hits) < h.k {
		h.hits = append(h.hits, x)
		h.up(len(h.hits) - 1)
	} else if worse(h.hits[0], x) {
		h.hits[0] = x
		h.down(0)
	}
}

// up moves hit i towards the root while it is worse than its parent.
func (h *topK) up(i int) {
	hs := h.hits
	x := hs[i]
	for i > 0 {
		p := (i - 1) / 2
		if !worse(x, hs[p]) {
			break
		}
		hs[i] = hs[p]
		i = p
	}
	hs[i] = x
}

// down moves hit i towards the leaves while a child is worse.
func (h *topK) down(i int) {
	hs := h.hits
	n := len(hs)
	x := hs[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && worse(hs[r], hs[c]) {
			c = r
		}
		if !worse(hs[c], x) {
			break
		}
		hs[i] = hs[c]
		i = c
	}
	hs[i] = x
}

// sorted is the hits nearest first.
func (h *topK) sorted() []Hit {
	out := slices.Clone(h.hits)
	slices.SortFunc(out, func(a, b Hit) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return out
}

// Merge is the global top-K of per-file results already sorted nearest
// first, with the file each came from: nearest first, ties by file then
// position.
func Merge[F any](k int, lists [][]Hit, files []F, less func(a, b F) bool) []struct {
	File F
	Hit  Hit
} {
	type item = struct {
		File F
		Hit  Hit
	}
	var all []item
	for i, l := range lists {
		for _, h := range l {
			all = append(all, item{files[i], h})
		}
	}
	slices.SortStableFunc(all, func(a, b item) int {
		switch {
		case a.Hit.Dist < b.Hit.Dist:
			return -1
		case a.Hit.Dist > b.Hit.Dist:
			return 1
		case less(a.File, b.File):
			return -1
		case less(b.File, a.File):
			return 1
		}
		return int(a.Hit.Pos - b.Hit.Pos)
	})
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// maskBits are the bitsets of masked searches (one bit per file
// position), reused.
var maskBits = sync.Pool{New: func() any { return new([]uint64) }}

// pqScratch is an ivf_pq search's working memory: the ADC table (M × 256
// floats), one list's passing rows and their inner products; pooled so a
// search allocates none of it.
type pqScratch struct {
	table []float32
	rows  []int32
	ips   []float32
}

var pqScratches = sync.Pool{New: func() any { return new(pqScratch) }}

// searchPQ scores the rows of the probed lists by asymmetric distance
// (ADC) over their PQ codes — |q − x̂|² = |q|² − 2(q·c + Σ_j
// table[j][code_j]) + |x̂|², with the query's table of inner products with
// every codeword built once per search, not once per list (as
// |q − c − r̂|² tables per list were), and |x̂|² kept per row — keeps the best
// K × refine and re-ranks those exactly from mat, so the distances
// returned are those Exact computes. A row is M bytes of codes instead of
// Dim float32s.
func (ix *Index) searchPQ(mat *Matrix, pk *Packed, q Query, sc scorer, order iter.Seq2[int, float32], nprobe, want, refine int, pass func(int64) bool) ([]Hit, Stats, error) {
	var st Stats
	pq := ix.PQ
	m := pq.M
	ws := pqScratches.Get().(*pqScratch)
	defer pqScratches.Put(ws)
	xhat := ix.reconNorms()
	ws.table = slices.Grow(ws.table[:0], m*PQCentroids)[:m*PQCentroids]
	pq.ipTable(q.Vector, ws.table)
	qq := dot(q.Vector, q.Vector)
	inf := float32(math.Inf(1))
	cand := &topK{k: q.K * refine, hits: make([]Hit, 0, q.K*refine)}
	worst := inf // the worst kept candidate once K × refine are kept
	passed := 0  // rows PQ-scored, and rows of skipped lists that would have been
	var lbs *listBounds
	if q.Bound != nil {
		lbs = newListBounds(q, pk)
	}
	stop := newProbeStop(ix, q)
	allValid := q.Mask == nil && pk != nil && pk.AllValid // every row of the lists passes
	for l, dc := range order {
		if st.Probed+st.Pruned >= nprobe && passed >= want || passed >= want && stop.stops(st.Probed+st.Pruned, dc) {
			break
		}
		ps, norms, xh := ix.Lists[l], ix.Norms[l], xhat[l]
		if lbs != nil && prunes(lbs.of(l, dc), q.Bound) {
			st.Pruned++
			if allValid {
				passed += len(ps)
				continue
			}
			for _, p := range ps {
				if pass(p) {
					passed++
				}
			}
			continue
		}
		st.Probed++
		rows := ws.rows[:0]
		if allValid {
			// every row passes: no position is looked up
			for i := range ps {
				rows = append(rows, int32(i))
			}
		} else {
			for i, p := range ps {
				if q.Mask == nil && mat.Valid[p] || q.Mask != nil && pass(p) {
					rows = append(rows, int32(i))
				}
			}
		}
		ws.rows = rows
		if len(rows) == 0 {
			continue
		}
		passed += len(rows)
		st.Approx += int64(len(rows))
		ips := slices.Grow(ws.ips[:0], len(rows))[:len(rows)]
		ws.ips = ips
		base := dot(q.Vector, ix.Centroids[l*ix.Dim:(l+1)*ix.Dim])
		for r := range ips {
			ips[r] = base
		}
		adcRows(ws.table, ix.Codes[l], m, rows, ips)
		for r, i := range rows {
			// |q − x̂|² by PQ; dot and cosine follow from it and the stored
			// |x|: q·x ≈ (|q|² + |x|² − |q − x̂|²) / 2 (nearer the truth for
			// near rows than q·x̂, whose error does not shrink with |q − x|).
			s := qq + xh[i] - 2*ips[r]
			switch n := norms[i]; q.Metric {
			case Dot:
				s = -(qq + n*n - s) / 2
			case Cosine:
				if n == 0 || sc.qnorm == 0 {
					s = 1
				} else {
					s = 1 - (qq+n*n-s)/(2*sc.qnorm*n)
				}
			}
			if s != s {
				s = inf
			}
			if s > worst {
				continue
			}
			cand.offer(Hit{ps[i], s})
			stop.offer(Hit{ps[i], s})
			if len(cand.hits) == cand.k {
				worst = cand.hits[0].Dist
			}
		}
	}
	h := &topK{k: q.K}
	for _, c := range cand.hits {
		h.offer(Hit{c.Pos, sc.dist(mat.Row(c.Pos))})
		st.Scored++
	}
	return h.sorted(), st, nil
}
