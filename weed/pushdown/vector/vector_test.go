package vector

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// clustered is n vectors of dim dimensions around 32 latent centres (so
// IVF recall is meaningful), every 97th row invalid (NULL).
func clustered(n, dim int, seed uint64) *Matrix {
	m, _ := clusteredLabelled(n, dim, seed)
	return m
}

// clusteredLabelled is clustered with each row's latent centre (its
// label, 0-31; -1 for an invalid row).
func clusteredLabelled(n, dim int, seed uint64) (*Matrix, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	labels := make([]int, n)
	centres := make([]float32, 32*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64() * 4)
	}
	m := &Matrix{Dim: dim, Data: make([]float32, n*dim), Valid: make([]bool, n)}
	for i := range n {
		labels[i] = -1
		if i%97 == 13 {
			continue
		}
		m.Valid[i] = true
		c := rng.IntN(32)
		labels[i] = c
		for j := range dim {
			m.Data[i*dim+j] = centres[c*dim+j] + float32(rng.NormFloat64())
		}
	}
	return m, labels
}

// bruteForce is the top-K by a plain scan and a full sort: the oracle.
func bruteForce(t *testing.T, m *Matrix, q Query) []Hit {
	var all []Hit
	for p := range m.Rows() {
		if !m.Valid[p] || (q.Mask != nil && !q.Mask.Contains(uint64(p))) {
			continue
		}
		d, err := Distance(q.Metric, q.Vector, m.Row(p))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, Hit{p, d})
	}
	slices.SortFunc(all, func(a, b Hit) int {
		if a.Dist != b.Dist {
			if a.Dist < b.Dist {
				return -1
			}
			return 1
		}
		return int(a.Pos - b.Pos)
	})
	return all[:min(len(all), q.K)]
}

func recall(got, want []Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[int64]bool{}
	for _, h := range want {
		in[h.Pos] = true
	}
	n := 0
	for _, h := range got {
		if in[h.Pos] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func queries(m *Matrix, n int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	var out [][]float32
	for len(out) < n {
		p := rng.Int64N(m.Rows())
		if !m.Valid[p] {
			continue
		}
		q := slices.Clone(m.Row(p))
		for j := range q {
			q[j] += float32(rng.NormFloat64() * 0.5)
		}
		out = append(out, q)
	}
	return out
}

func TestDistancesFollowTheMetricsOfVectorMetric(t *testing.T) {
	q, x := []float32{1, 2, 3}, []float32{4, 6, 3}
	for _, tc := range []struct {
		m    Metric
		want float64
	}{
		{L2, 9 + 16},
		{Dot, -(4 + 12 + 9)},
		{Cosine, 1 - 25/(math.Sqrt(14)*math.Sqrt(61))},
	} {
		d, err := Distance(tc.m, q, x)
		if err != nil || math.Abs(float64(d)-tc.want) > 1e-5 {
			t.Fatalf("%s distance = %v, %v; want %v", tc.m, d, err, tc.want)
		}
	}
	if d, _ := Distance(Cosine, q, []float32{0, 0, 0}); d != 1 {
		t.Fatalf("cosine distance to a zero vector = %v, want 1", d)
	}
	if _, err := Distance(L2, q, x[:2]); err == nil {
		t.Fatal("vectors of different lengths were compared")
	}
}

func TestCentroidCountFollowsTheSquareRootRuleAndKeepsEnoughPointsPerList(t *testing.T) {
	for _, tc := range []struct {
		rows int64
		want int
	}{{0, 0}, {30000, 512}, {26000, 512}, {34000, 512}, {60000, 1024}, {1_000_000, 4096}, {10000, 256}, {1000, 16}, {100, 2}} {
		if got := CentroidCount(tc.rows); got != tc.want {
			t.Errorf("CentroidCount(%d) = %d, want %d", tc.rows, got, tc.want)
		}
	}
}

func TestKMeansIsTheSameOnOneCoreAndOnMany(t *testing.T) {
	m := clustered(4000, 16, 3)
	pts := validPoints(m)
	a := KMeans(pts, 16, KMeansOptions{K: 32, Seed: 42, Workers: 1})
	b := KMeans(pts, 16, KMeansOptions{K: 32, Seed: 42, Workers: 4})
	if !slices.Equal(a, b) {
		t.Fatal("k-means with the same seed differs between 1 and 4 workers")
	}
	c := KMeans(pts, 16, KMeansOptions{K: 32, Seed: 43, Workers: 4})
	if slices.Equal(a, c) {
		t.Fatal("k-means ignores its seed")
	}
}

func TestProductQuantizationReconstructsVectorsCloserThanTheirSpread(t *testing.T) {
	m := clustered(5000, 32, 5)
	pts := validPoints(m)
	pq, err := TrainPQ(pts, 32, 8, KMeansOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	code, rec := make([]byte, 8), make([]float32, 32)
	var errSum, spread float64
	n := len(pts) / 32
	for i := range n {
		x := pts[i*32 : (i+1)*32]
		pq.Encode(x, code)
		pq.Decode(code, rec)
		errSum += float64(l2sq(x, rec))
		spread += float64(l2sq(x, pts[((i+1)%n)*32:((i+1)%n+1)*32]))
	}
	if errSum > 0.2*spread {
		t.Fatalf("PQ reconstruction error %.0f is not well under the spread %.0f", errSum, spread)
	}
	if _, err := TrainPQ(pts, 32, 5, KMeansOptions{}); err == nil {
		t.Fatal("5 subspaces of 32 dimensions were accepted")
	}
}

func TestExactSearchEqualsBruteForceExactly(t *testing.T) {
	m := clustered(3000, 24, 7)
	for _, metric := range []Metric{L2, Cosine, Dot} {
		for _, q := range queries(m, 10, 1) {
			qq := Query{Vector: q, K: 10, Metric: metric}
			got, st, err := Exact(m, qq)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteForce(t, m, qq); !slices.Equal(got, want) {
				t.Fatalf("%s: exact %v, brute force %v", metric, got, want)
			}
			if !st.Exact || st.Scored != int64(countValid(m)) {
				t.Fatalf("stats %+v", st)
			}
		}
	}
}

func countValid(m *Matrix) int {
	n := 0
	for _, v := range m.Valid {
		if v {
			n++
		}
	}
	return n
}

func TestIVFAndIVFPQReachRecallAtTenOfNinetyFivePercentAtTheDefaultNProbe(t *testing.T) {
	m := clustered(20000, 32, 11)
	for _, pq := range []bool{false, true} {
		ix, err := Build(m, BuildOptions{PQ: pq, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if ix.NList() != CentroidCount(int64(countValid(m))) {
			t.Fatalf("nlist %d", ix.NList())
		}
		for _, metric := range []Metric{L2, Cosine, Dot} {
			var r float64
			var scored int64
			qs := queries(m, 50, 3)
			for _, q := range qs {
				qq := Query{Vector: q, K: 10, Metric: metric}
				got, st, err := ix.Search(m, qq)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 10 {
					t.Fatalf("%d results", len(got))
				}
				r += recall(got, bruteForce(t, m, qq))
				scored += st.Scored
			}
			r /= float64(len(qs))
			t.Logf("pq=%v %s: recall@10 %.3f, %d exact distances per query of %d rows", pq, metric, r, scored/int64(len(qs)), m.Rows())
			if r < 0.95 {
				t.Errorf("pq=%v %s: recall@10 = %.3f, want ≥ 0.95", pq, metric, r)
			}
		}
	}
}

func TestFilteredSearchReturnsKRowsThatAllPassTheMaskWithRecallAgainstTheFilteredTruth(t *testing.T) {
	m := clustered(20000, 32, 13)
	for _, pq := range []bool{false, true} {
		ix, err := Build(m, BuildOptions{PQ: pq, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, sel := range []float64{0.5, 0.1, 0.01, 0.001} {
			rng := rand.New(rand.NewPCG(uint64(sel*1e4), 9))
			mask := roaring64.New()
			for p := range m.Rows() {
				if rng.Float64() < sel {
					mask.Add(uint64(p))
				}
			}
			checkFilteredRecall(t, fmt.Sprintf("pq=%v", pq), m, ix, queries(m, 20, 4), map[string]*roaring64.Bitmap{fmt.Sprintf("σ=%g", sel): mask})
		}
	}
}

// checkFilteredRecall searches ix under each mask and fails unless every
// query gets min(k, matching rows) rows, all in the mask, and the mean
// recall@10 against the filtered truth is at least 0.95.
func checkFilteredRecall(t *testing.T, name string, m *Matrix, ix *Index, qs [][]float32, masks map[string]*roaring64.Bitmap) {
	t.Helper()
	for sel, mask := range masks {
		var r float64
		var scored int64
		for _, q := range qs {
			qq := Query{Vector: q, K: 10, Metric: L2, Mask: mask}
			got, st, err := ix.Search(m, qq)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteForce(t, m, qq)
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d results, %d rows match", name, sel, len(got), len(want))
			}
			for _, h := range got {
				if !mask.Contains(uint64(h.Pos)) || !m.Valid[h.Pos] {
					t.Fatalf("%s %s: row %d is masked out or NULL", name, sel, h.Pos)
				}
			}
			r += recall(got, want)
			scored += st.Scored
		}
		r /= float64(len(qs))
		t.Logf("%s %s (%d rows): recall@10 %.3f, %d exact distances per query", name, sel, mask.GetCardinality(), r, scored/int64(len(qs)))
		if r < 0.95 {
			t.Errorf("%s %s: recall@10 = %.3f against the filtered truth, want ≥ 0.95", name, sel, r)
		}
	}
}

// A filter correlated with the vectors (a label: its rows sit in a few
// lists, often far from the query) is the hard case of post-filtering:
// the nearest lists hold few matching rows.
func TestFilteredSearchOnALabelCorrelatedWithTheVectorsKeepsRecallAtEverySelectivity(t *testing.T) {
	m, labels := clusteredLabelled(20000, 32, 19)
	rng := rand.New(rand.NewPCG(23, 1))
	thin := make([]float64, m.Rows())
	for i := range thin {
		thin[i] = rng.Float64()
	}
	// σ ≈ 50%: half the labels; 10%: four labels (12.5%) thinned to 80%;
	// 1% and 0.1%: one label (3.1%) thinned to 32% and 3.2%.
	keep := map[string]func(p int) bool{
		"σ=50%":  func(p int) bool { return labels[p] >= 0 && labels[p] < 16 },
		"σ=10%":  func(p int) bool { return labels[p] >= 0 && labels[p] < 4 && thin[p] < 0.8 },
		"σ=1%":   func(p int) bool { return labels[p] == 5 && thin[p] < 0.32 },
		"σ=0.1%": func(p int) bool { return labels[p] == 5 && thin[p] < 0.032 },
	}
	masks := map[string]*roaring64.Bitmap{}
	for sel, k := range keep {
		masks[sel] = roaring64.New()
		for p := range int(m.Rows()) {
			if k(p) {
				masks[sel].Add(uint64(p))
			}
		}
	}
	qs := queries(m, 40, 6) // from every label: most are far from the masked ones
	for _, pq := range []bool{false, true} {
		ix, err := Build(m, BuildOptions{PQ: pq, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		checkFilteredRecall(t, map[bool]string{false: "ivf", true: "ivf_pq"}[pq], m, ix, qs, masks)
	}
}

func TestASmallFileGetsNoListsAndIsSearchedExactly(t *testing.T) {
	m := clustered(500, 8, 17)
	ix, err := Build(m, BuildOptions{Seed: 1})
	if err != nil || ix.NList() != 0 {
		t.Fatalf("nlist %d, %v", ix.NList(), err)
	}
	q := Query{Vector: queries(m, 1, 1)[0], K: 5, Metric: Cosine}
	got, st, err := ix.Search(m, q)
	if err != nil || !st.Exact || !slices.Equal(got, bruteForce(t, m, q)) {
		t.Fatalf("got %v %+v %v", got, st, err)
	}
}

func TestADimensionMismatchIsALoudError(t *testing.T) {
	m := clustered(2000, 8, 19)
	ix, err := Build(m, BuildOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { _, _, err := ix.Search(m, Query{Vector: make([]float32, 7), K: 3}); return err },
		func() error { _, _, err := Exact(m, Query{Vector: make([]float32, 9), K: 3}); return err },
	} {
		if err := f(); !errors.Is(err, ErrDimension) {
			t.Fatalf("err = %v, want a dimension mismatch", err)
		}
	}
	if _, _, err := Exact(m, Query{Vector: []float32{1, 2, 3, 4, 5, 6, 7, float32(math.NaN())}, K: 3}); err == nil {
		t.Fatal("a NaN query was accepted")
	}
}

func validPoints(m *Matrix) []float32 {
	var pts []float32
	for p := range m.Rows() {
		if m.Valid[p] {
			pts = append(pts, m.Row(p)...)
		}
	}
	return pts
}

// tightBlobs is a tenant of the partitioned demo: n rows of dim
// dimensions around three centres (N(0,1) coordinates) with N(0, 0.15²)
// noise — nearest neighbours inside a blob are nearly equidistant.
func tightBlobs(n, dim int, seed uint64) *Matrix {
	rng := rand.New(rand.NewPCG(seed, 2))
	centres := make([]float32, 3*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64())
	}
	m := &Matrix{Dim: dim, Data: make([]float32, n*dim), Valid: make([]bool, n)}
	for i := range n {
		m.Valid[i] = true
		c := i % 3
		for j := range dim {
			m.Data[i*dim+j] = centres[c*dim+j] + float32(0.15*rng.NormFloat64())
		}
	}
	return m
}

func TestTheDefaultNProbeKeepsRecallOnSmallFilesOfTightClusters(t *testing.T) {
	m := tightBlobs(10_000, 64, 5)
	ix, err := Build(m, BuildOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var r float64
	qs := queries(m, 40, 9)
	for _, q := range qs {
		qq := Query{Vector: q, K: 10, Metric: L2}
		got, st, err := ix.Search(m, qq)
		if err != nil {
			t.Fatal(err)
		}
		if st.Scored < DefaultMinScored/2 { // lists hold DefaultMinScored on average
			t.Fatalf("scored %d vectors, want about %d", st.Scored, DefaultMinScored)
		}
		r += recall(got, bruteForce(t, m, qq))
	}
	r /= float64(len(qs))
	t.Logf("%d lists: recall@10 %.3f at the default nprobe", ix.NList(), r)
	if r < 0.95 {
		t.Errorf("recall@10 = %.3f, want ≥ 0.95", r)
	}
}

// The floor of DefaultMinScored rows is for tight clusters; where the
// centroids beyond the first DefaultNProbe lists are clearly farther than
// the neighbours found (32 separated centres), an unmasked default L2
// search stops there instead of scanning most of a small file, with its
// recall, and an explicit nprobe or another metric still probes the floor.
func TestTheDefaultNProbeStopsWideningAtListsFartherThanTheNeighboursFound(t *testing.T) {
	m := clustered(6000, 64, 11)
	ix, err := Build(m, BuildOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ix.Pack(m)
	if err != nil {
		t.Fatal(err)
	}
	floor := defaultNProbeOf(ix.NList(), ix.Rows)
	if floor <= DefaultNProbe(ix.NList()) {
		t.Fatalf("%d lists of %d rows: the floor (%d lists) adds none to %d", ix.NList(), ix.Rows, floor, DefaultNProbe(ix.NList()))
	}
	var r float64
	var scored, probed int64
	qs := queries(m, 40, 3)
	for _, q := range qs {
		qq := Query{Vector: q, K: 10, Metric: L2}
		got, st, err := ix.SearchPacked(m, pk, qq)
		if err != nil {
			t.Fatal(err)
		}
		scored, probed = scored+st.Scored, probed+int64(st.Probed)
		r += recall(got, bruteForce(t, m, qq))
		// the floor is probed when asked for (nprobe) and for dot
		for _, o := range []Query{{Vector: q, K: 10, Metric: L2, NProbe: floor}, {Vector: q, K: 10, Metric: Dot}} {
			if _, st, err := ix.SearchPacked(m, pk, o); err != nil || st.Probed+st.Pruned < floor {
				t.Fatalf("nprobe %d metric %s: probed %d lists, want %d (%v)", o.NProbe, o.Metric, st.Probed+st.Pruned, floor, err)
			}
		}
	}
	n := int64(len(qs))
	r /= float64(n)
	t.Logf("%d lists, floor %d: %d lists and %d rows probed on average, recall@10 %.3f", ix.NList(), floor, probed/n, scored/n, r)
	if probed/n >= int64(floor) || scored/n >= DefaultMinScored/2 {
		t.Errorf("probed %d lists (%d rows) on average: the widening to %d lists did not stop", probed/n, scored/n, floor)
	}
	if r < 0.95 {
		t.Errorf("recall@10 = %.3f, want ≥ 0.95", r)
	}
}

// TestTopKKeepsTheKNearestWithTiesByPosition checks the in-place heap
// against a sort of every hit offered: distances drawn from few values
// (many ties), k from 1 to more than the hits.
func TestTopKKeepsTheKNearestWithTiesByPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		n, k := rng.IntN(300), 1+rng.IntN(40)
		h := &topK{k: k}
		var all []Hit
		for i := range n {
			x := Hit{Pos: int64(rng.IntN(1000)), Dist: float32(rng.IntN(8))}
			if i%3 == 0 {
				x.Pos = int64(i) // distinct positions beside repeated ones
			}
			all = append(all, x)
			h.offer(x)
		}
		slices.SortFunc(all, func(a, b Hit) int { return cmp.Or(cmp.Compare(a.Dist, b.Dist), cmp.Compare(a.Pos, b.Pos)) })
		want := all[:min(k, len(all))]
		if got := h.sorted(); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d): kept %v, want %v", trial, n, k, got, want)
		}
	}
}
