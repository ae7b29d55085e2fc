package vector

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// searchFiles searches files for q the way the volume does: with a
// bound, nearest lower bound first, each file's hits added to the shared
// Bound and a file whose lower bound exceeds it skipped whole; it returns
// the merged top-K and the vectors scored.
func searchFiles(t *testing.T, files []*Matrix, ixs []*Index, pks []*Packed, q Query, masks []*roaring64.Bitmap, bounded bool) ([]Hit, int64, int) {
	t.Helper()
	order := make([]int, len(files))
	lbs := make([]float64, len(files))
	for i := range files {
		order[i] = i
		lbs[i] = ixs[i].LowerBound(pks[i], q)
	}
	var b *Bound
	if bounded {
		b = NewBound(q.K)
		slices.SortStableFunc(order, func(x, y int) int {
			switch {
			case lbs[x] < lbs[y]:
				return -1
			case lbs[x] > lbs[y]:
				return 1
			}
			return 0
		})
	}
	lists := make([][]Hit, len(files))
	var scored int64
	pruned := 0
	for _, i := range order {
		if prunes(lbs[i], b) {
			pruned += ixs[i].NList()
			continue
		}
		fq := q
		fq.Mask, fq.Bound = masks[i], b
		if bounded { // as the volume does: the centroid distances computed once
			fq.Centroids = ixs[i].CentroidDistances(q)
		}
		hits, st, err := ixs[i].SearchPacked(files[i], pks[i], fq)
		if err != nil {
			t.Fatal(err)
		}
		lists[i] = hits
		scored += st.Scored
		pruned += st.Pruned
		b.Add(hits)
	}
	ids := make([]int, len(files))
	for i := range ids {
		ids[i] = i
	}
	var out []Hit
	for _, m := range Merge(q.K, lists, ids, func(a, b int) bool { return a < b }) {
		out = append(out, Hit{int64(m.File)<<32 | m.Hit.Pos, m.Hit.Dist})
	}
	return out, scored, pruned
}

// boundFiles are count files of gen, every step-th row (from the file's
// number) NULL, with their indexes (ivf, or ivf_pq) and packed lists (ivf)
// or list radii (ivf_pq).
func boundFiles(t *testing.T, count, step int, gen func(f int) *Matrix, pq bool) ([]*Matrix, []*Index, []*Packed) {
	t.Helper()
	var files []*Matrix
	var ixs []*Index
	var pks []*Packed
	for f := range count {
		m := gen(f)
		for p := int64(f); p < m.Rows(); p += int64(step) {
			m.Valid[p] = false // NULL vectors are never returned
		}
		ix, err := Build(m, BuildOptions{PQ: pq, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		pack := ix.Pack
		if pq {
			pack = ix.PackRadii
		}
		pk, err := pack(m)
		if err != nil {
			t.Fatal(err)
		}
		files, ixs, pks = append(files, m), append(ixs, ix), append(pks, pk)
	}
	return files, ixs, pks
}

// Files of tight, well separated blobs (the tenant-partitioned demo's
// shape) and of one gaussian (lists abutting): the lists of the files far from the
// query are skipped, and the merged top-K is exactly what searching every
// list finds.
func TestABoundSharedByAQuerysFilesSkipsFarListsAndKeepsTheTopKExactlyTheSame(t *testing.T) {
	const n, dim = 16_000, 16
	for _, data := range []struct {
		name string
		gen  func(f int) *Matrix
	}{
		{"tight blobs", func(f int) *Matrix { return tightBlobs(n, dim, uint64(100+f)) }},
		{"one gaussian", func(f int) *Matrix { return gaussian(n, dim, uint64(200+f)) }},
	} {
		files, ixs, pks := boundFiles(t, 6, 101, data.gen, false)
		half := roaring64.New()
		for p := range uint64(n) {
			if p%2 == 0 {
				half.Add(p)
			}
		}
		var qs [][]float32
		for f, m := range files {
			qs = append(qs, queries(m, 3, uint64(f))...)
		}
		for _, metric := range []Metric{L2, Dot, Cosine} {
			for _, masked := range []bool{false, true} {
				masks := make([]*roaring64.Bitmap, len(files))
				if masked {
					for i := range masks {
						masks[i] = half
					}
				}
				var scoredAll, scoredBound int64
				pruned := 0
				for qi, v := range qs {
					q := Query{Vector: v, K: 10, Metric: metric}
					want, all, _ := searchFiles(t, files, ixs, pks, q, masks, false)
					got, sb, p := searchFiles(t, files, ixs, pks, q, masks, true)
					if !slices.Equal(got, want) {
						t.Fatalf("%s, %s masked %v query %d: with the bound %v, searching every list %v", data.name, metric, masked, qi, got, want)
					}
					if len(got) != q.K {
						t.Fatalf("%s, %s masked %v query %d: %d hits, want %d", data.name, metric, masked, qi, len(got), q.K)
					}
					scoredAll, scoredBound, pruned = scoredAll+all, scoredBound+sb, pruned+p
				}
				t.Logf("%s, %s masked %v: scored %d without the bound, %d with it (%d lists skipped)", data.name, metric, masked, scoredAll, scoredBound, pruned)
				switch {
				case metric == Cosine && pruned > 0:
					t.Errorf("cosine has no lower bound, yet %d lists were skipped", pruned)
				case data.name == "tight blobs" && metric == L2 && scoredBound*3 > scoredAll:
					t.Errorf("%s, L2 masked %v: the bound scored %d of %d vectors, want under a third", data.name, masked, scoredBound, scoredAll)
				}
			}
		}
	}
}

func TestABoundIsTheKthSmallestDistanceAddedAndInfiniteUntilKWere(t *testing.T) {
	b := NewBound(3)
	if v := b.Value(); !math.IsInf(float64(v), 1) {
		t.Fatalf("empty bound %v, want +Inf", v)
	}
	b.Add([]Hit{{1, 5}, {2, 1}})
	if v := b.Value(); !math.IsInf(float64(v), 1) {
		t.Fatalf("bound of 2 distances for k = 3: %v, want +Inf", v)
	}
	b.Add([]Hit{{7, 9}, {8, 2}})
	if v := b.Value(); v != 5 {
		t.Fatalf("bound %v, want 5 (of 1, 2, 5, 9)", v)
	}
	var nilBound *Bound
	nilBound.Add([]Hit{{1, 1}})
	if prunes(1e30, nilBound) {
		t.Fatal("a nil bound pruned")
	}
}

func TestARowThatIsNotFiniteMakesItsListsRadiusInfinite(t *testing.T) {
	c := []float32{0, 0}
	if r := radius(c, []float32{3, 4, 0, 1}); r < 5 || r > 5.0001 {
		t.Fatalf("radius %v, want 5", r)
	}
	if r := radius(c, []float32{float32(math.NaN()), 0}); !math.IsInf(float64(r), 1) {
		t.Fatalf("radius of a NaN row %v, want +Inf", r)
	}
	lb := &listBounds{m: L2, radii: []float32{float32(math.Inf(1))}}
	if v := lb.of(0, 100); !math.IsInf(v, -1) {
		t.Fatalf("lower bound of a list of infinite radius %v, want -Inf", v)
	}
}

// gaussian is n vectors of N(0, 1) coordinates: no clusters, every list
// borders others.
func gaussian(n, dim int, seed uint64) *Matrix {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &Matrix{Dim: dim, Data: make([]float32, n*dim), Valid: make([]bool, n)}
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	for i := range m.Valid {
		m.Valid[i] = true
	}
	return m
}

// Packed lists of only valid rows drop a row no nearer than the worst
// kept candidate before reading its position: the hits and the vectors
// scored are those of the search gathering rows from the matrix.
func TestASearchOfPackedListsOfValidRowsFindsWhatTheGatheringSearchFinds(t *testing.T) {
	m := gaussian(12_000, 24, 9)
	ix, err := Build(m, BuildOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ix.Pack(m)
	if err != nil {
		t.Fatal(err)
	}
	if !pk.AllValid {
		t.Fatal("lists of valid rows packed as not all valid")
	}
	for qi, v := range queries(m, 12, 4) {
		for _, metric := range []Metric{L2, Dot, Cosine} {
			q := Query{Vector: v, K: 10, Metric: metric}
			want, wst, err := ix.Search(m, q)
			if err != nil {
				t.Fatal(err)
			}
			got, gst, err := ix.SearchPacked(m, pk, q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || gst.Scored != wst.Scored || gst.Probed != wst.Probed {
				t.Fatalf("query %d %s: packed %v (%+v), gathered %v (%+v)", qi, metric, got, gst, want, wst)
			}
		}
	}
}
