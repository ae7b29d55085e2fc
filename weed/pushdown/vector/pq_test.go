package vector

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// The ivf_pq search under a mask large enough not to be scanned exactly:
// PQ distances from one ADC table per query over the passing rows of the
// probed lists, the best k × refine re-ranked exactly. σ = 0.2 at the
// default nprobe and σ = 0.01 at nprobe 4 (the probe widened until as
// many masked rows were scored as an unmasked search scores) both take
// that path, return exactly k rows that pass the mask, with the exact
// distances, and keep recall@10 ≥ 0.95 against the filtered brute force.
func TestIVFPQMaskedSearchScoresCodesAndReturnsKMatchingRowsWithRecall(t *testing.T) {
	m := clustered(60000, 32, 29)
	ix, err := Build(m, BuildOptions{PQ: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sel    float64
		nprobe int
	}{{0.2, 0}, {0.01, 4}} {
		rng := rand.New(rand.NewPCG(uint64(c.sel*1e4), 31))
		mask := roaring64.New()
		for p := range m.Rows() {
			if rng.Float64() < c.sel {
				mask.Add(uint64(p))
			}
		}
		var r float64
		qs := queries(m, 30, 8)
		for _, metric := range []Metric{L2, Cosine, Dot} {
			r = 0
			for _, v := range qs {
				q := Query{Vector: v, K: 10, Metric: metric, Mask: mask, NProbe: c.nprobe}
				got, st, err := ix.Search(m, q)
				if err != nil {
					t.Fatal(err)
				}
				if st.Exact || st.Approx == 0 || st.Scored != int64(q.K*DefaultRefine) {
					t.Fatalf("σ=%g %s: searched exactly %v, %d PQ and %d exact distances: the masked PQ path was not taken", c.sel, metric, st.Exact, st.Approx, st.Scored)
				}
				want := bruteForce(t, m, q)
				if len(got) != q.K || len(want) != q.K {
					t.Fatalf("σ=%g %s: %d results, want %d", c.sel, metric, len(got), q.K)
				}
				for _, h := range got {
					if !mask.Contains(uint64(h.Pos)) {
						t.Fatalf("σ=%g %s: row %d is masked out", c.sel, metric, h.Pos)
					}
					if d, _ := Distance(metric, v, m.Row(h.Pos)); d != h.Dist {
						t.Fatalf("σ=%g %s: row %d at %g, its exact distance is %g", c.sel, metric, h.Pos, h.Dist, d)
					}
				}
				r += recall(got, want)
			}
			r /= float64(len(qs))
			t.Logf("σ=%g nprobe %d %s: recall@10 %.3f", c.sel, c.nprobe, metric, r)
			if r < 0.95 {
				t.Errorf("σ=%g %s: recall@10 = %.3f against the filtered truth, want ≥ 0.95", c.sel, metric, r)
			}
		}
	}
}

// The ADC table and the reconstructed norms give the distance to the
// row's PQ reconstruction exactly as decoding it would.
func TestADCDistanceIsTheDistanceToTheDecodedRow(t *testing.T) {
	m := clustered(4000, 24, 37)
	ix, err := Build(m, BuildOptions{PQ: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	q := queries(m, 1, 3)[0]
	table := make([]float32, ix.PQ.M*PQCentroids)
	ix.PQ.ipTable(q, table)
	xhat := ix.reconNorms()
	x := make([]float32, ix.Dim)
	checked := 0
	for l, ps := range ix.Lists {
		if len(ps) == 0 {
			continue
		}
		rows := make([]int32, len(ps))
		for i := range rows {
			rows[i] = int32(i)
		}
		ips := make([]float32, len(ps))
		adcRows(table, ix.Codes[l], ix.PQ.M, rows, ips)
		for i := range ps {
			ix.PQ.Decode(ix.Codes[l][i*ix.PQ.M:(i+1)*ix.PQ.M], x)
			for j := range x {
				x[j] += ix.Centroids[l*ix.Dim+j]
			}
			got := dot(q, q) + xhat[l][i] - 2*(dot(q, ix.Centroids[l*ix.Dim:(l+1)*ix.Dim])+ips[i])
			want := l2sq(q, x)
			if d := got - want; d > 1e-3*(1+want) || d < -1e-3*(1+want) {
				t.Fatalf("list %d row %d: ADC distance %g, decoded %g", l, i, got, want)
			}
			checked++
		}
	}
	if checked != countValid(m) {
		t.Fatalf("checked %d rows of %d", checked, countValid(m))
	}
}

func TestDefaultSubspacesAreAtMostSixtyFourOfAtLeastFourDimensionsDividingTheDimension(t *testing.T) {
	for dim, want := range map[int]int{64: 16, 784: 56, 768: 64, 1536: 64, 32: 8, 4: 1, 6: 3, 97: 97, 3: 3, 1: 1} {
		if got := DefaultSubspaces(dim); got != want {
			t.Errorf("DefaultSubspaces(%d) = %d, want %d", dim, got, want)
		}
	}
}

// On wide vectors ivf_pq PQ-scores a mask an ivf search would scan
// exactly (fewer rows than an unmasked search scores, more than a 16th of
// the file's positions per dimension): every list is probed, every
// passing row PQ-scored once, k × refine re-ranked; k rows that pass,
// recall ≥ 0.95 against the filtered brute force.
func TestIVFPQScoresAMaskBelowTheUnmaskedShareByCodesOnWideVectors(t *testing.T) {
	m := clustered(12000, 256, 41)
	ix, err := Build(m, BuildOptions{PQ: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(43, 1))
	mask := roaring64.New()
	valid := int64(0) // masked rows with a vector
	for p := range m.Rows() {
		if rng.Float64() < 0.15 {
			mask.Add(uint64(p))
			if m.Valid[p] {
				valid++
			}
		}
	}
	qs := queries(m, 20, 9)
	var r float64
	for _, v := range qs {
		q := Query{Vector: v, K: 10, Mask: mask}
		got, st, err := ix.Search(m, q)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exact || st.Approx != valid || st.Probed != ix.NList() {
			t.Fatalf("exact %v, %d PQ distances of %d masked rows with a vector, %d of %d lists probed: want every one PQ-scored", st.Exact, st.Approx, valid, st.Probed, ix.NList())
		}
		if len(got) != q.K {
			t.Fatalf("%d results", len(got))
		}
		for _, h := range got {
			if !mask.Contains(uint64(h.Pos)) || !m.Valid[h.Pos] {
				t.Fatalf("row %d is masked out or NULL", h.Pos)
			}
		}
		r += recall(got, bruteForce(t, m, q))
	}
	if r /= float64(len(qs)); r < 0.95 {
		t.Errorf("recall@10 = %.3f, want ≥ 0.95", r)
	}
	t.Logf("recall@10 %.3f", r)
}

// ivf_pq under a Bound shared by a query's files (the list radii from
// PackRadii): far lists and files are skipped — on tight blobs most of
// them — and the merged top-K is nowhere worse than searching every list
// (a skipped list's rows are all farther than k exact hits already found;
// the candidates it would have taken leave room for others).
func TestIVFPQUnderABoundSkipsFarListsAndReturnsATopKNoWorse(t *testing.T) {
	const n, dim = 8000, 16
	files, ixs, pks := boundFiles(t, 5, 97, func(f int) *Matrix { return tightBlobs(n, dim, uint64(300+f)) }, true)
	masks := make([]*roaring64.Bitmap, len(files))
	var qs [][]float32
	for f, m := range files {
		qs = append(qs, queries(m, 3, uint64(f))...)
	}
	for _, metric := range []Metric{L2, Dot} {
		pruned := 0
		for qi, v := range qs {
			q := Query{Vector: v, K: 10, Metric: metric}
			want, _, _ := searchFiles(t, files, ixs, pks, q, masks, false)
			got, _, p := searchFiles(t, files, ixs, pks, q, masks, true)
			if len(got) != q.K || len(want) != q.K {
				t.Fatalf("%s query %d: %d hits with the bound, %d without, want %d", metric, qi, len(got), len(want), q.K)
			}
			for i := range got {
				if got[i].Dist > want[i].Dist {
					t.Fatalf("%s query %d: hit %d at %g with the bound, %g searching every list", metric, qi, i, got[i].Dist, want[i].Dist)
				}
			}
			pruned += p
		}
		t.Logf("%s: %d lists skipped over %d queries", metric, pruned, len(qs))
		if metric == L2 && pruned == 0 {
			t.Errorf("L2 on tight blobs: no list skipped")
		}
	}
}
