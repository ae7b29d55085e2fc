package vector

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// BenchmarkFashionLabelSearch times the searches of the benchmark's σ =
// 0.2 Fashion-MNIST cases on one file: a label-partitioned file (one
// label, 6,000 images, searched unmasked) and a 15,000-image file under a
// mask of two labels, by ivf and ivf_pq at the default nprobe; it logs
// recall@10 against Exact and the distances computed.
func BenchmarkFashionLabelSearch(b *testing.B) {
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		b.Skipf("Fashion-MNIST is not installed at %s: %v", FashionMNISTDir, err)
	}
	const n = 15000
	all, err := LoadFashionMNIST("train-images-idx3-ubyte.gz", 60000)
	if err != nil {
		b.Fatal(err)
	}
	labels, err := LoadFashionMNISTLabels("train-labels-idx1-ubyte.gz", 60000)
	if err != nil {
		b.Fatal(err)
	}
	test, err := LoadFashionMNIST("t10k-images-idx3-ubyte.gz", 20)
	if err != nil {
		b.Fatal(err)
	}
	part := &Matrix{Dim: all.Dim}
	for p := range all.Rows() {
		if labels[p] == 3 {
			part.Data = append(part.Data, all.Row(p)...)
			part.Valid = append(part.Valid, true)
		}
	}
	file := &Matrix{Dim: all.Dim, Data: all.Data[:n*all.Dim], Valid: all.Valid[:n]}
	mask := roaring64.New()
	for p := range n {
		if labels[p] == 3 || labels[p] == 7 {
			mask.Add(uint64(p))
		}
	}
	cases := []struct {
		name string
		m    *Matrix
		mask *roaring64.Bitmap
	}{{"label-file", part, nil}, {"file", file, nil}, {"masked-0.2", file, mask}}
	for _, c := range cases {
		for _, pq := range []bool{false, true} {
			ix, err := Build(c.m, BuildOptions{PQ: pq, Seed: 1, M: benchM})
			if err != nil {
				b.Fatal(err)
			}
			var pk *Packed
			if !pq {
				if pk, err = ix.Pack(c.m); err != nil {
					b.Fatal(err)
				}
			}
			kind := map[bool]string{false: "ivf", true: "ivf_pq"}[pq]
			var r float64
			var scored, approx int64
			for i := range test.Rows() {
				q := Query{Vector: test.Row(i), K: 10, Mask: c.mask}
				got, st, err := ix.SearchPacked(c.m, pk, q)
				if err != nil {
					b.Fatal(err)
				}
				want, _, _ := Exact(c.m, q)
				r += recall(got, want)
				scored, approx = scored+st.Scored, approx+st.Approx
			}
			b.Logf("%s %s (%d rows, %d lists): recall@10 %.3f, %d exact + %d PQ distances per query", c.name, kind, c.m.Rows(), ix.NList(),
				r/float64(test.Rows()), scored/test.Rows(), approx/test.Rows())
			b.Run(fmt.Sprintf("%s-%s", c.name, kind), func(b *testing.B) {
				i := int64(0)
				for b.Loop() {
					if _, _, err := ix.SearchPacked(c.m, pk, Query{Vector: test.Row(i % test.Rows()), K: 10, Mask: c.mask}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// benchM is the ivf_pq subspaces of BenchmarkFashionLabelSearch
// (LAKEWEED_BENCH_PQ_M; unset: DefaultSubspaces).
var benchM, _ = strconv.Atoi(os.Getenv("LAKEWEED_BENCH_PQ_M"))
