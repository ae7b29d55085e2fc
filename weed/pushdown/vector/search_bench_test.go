package vector

import (
	"fmt"
	"testing"
)

// BenchmarkSearch times one unmasked ivf search of a file at the default
// nprobe (the volume's share of a warm plan).
func BenchmarkSearch(b *testing.B) {
	for _, c := range []struct{ rows, dim int }{{25_000, 64}, {250_000, 64}, {15_000, 784}} {
		m := clustered(c.rows, c.dim, 21)
		ix, err := Build(m, BuildOptions{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		qs := queries(m, 16, 5)
		b.Run(fmt.Sprintf("ivf-%dx%d", c.rows, c.dim), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, _, err := ix.Search(m, Query{Vector: qs[i%len(qs)], K: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		pk, err := ix.Pack(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("ivf-packed-%dx%d", c.rows, c.dim), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, _, err := ix.SearchPacked(m, pk, Query{Vector: qs[i%len(qs)], K: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("exact-%dx%d", c.rows, c.dim), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, _, err := Exact(m, Query{Vector: qs[i%len(qs)], K: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkSearchSmallFile times the packed search of a 10,000-row file
// (a tenant's file of the partitioned demo) at the default nprobe and at
// nprobe 64, reporting the rows scored and lists probed a search.
func BenchmarkSearchSmallFile(b *testing.B) {
	m := clustered(10_000, 64, 21)
	ix, err := Build(m, BuildOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	pk, err := ix.Pack(m)
	if err != nil {
		b.Fatal(err)
	}
	qs := queries(m, 16, 5)
	for _, nprobe := range []int{0, 16, 64} {
		b.Run(fmt.Sprintf("nprobe-%d-of-%d", nprobe, ix.NList()), func(b *testing.B) {
			i := 0
			var scored, probed int64
			for b.Loop() {
				_, st, err := ix.SearchPacked(m, pk, Query{Vector: qs[i%len(qs)], K: 10, NProbe: nprobe})
				if err != nil {
					b.Fatal(err)
				}
				scored, probed = scored+st.Scored, probed+int64(st.Probed)
				i++
			}
			b.ReportMetric(float64(scored)/float64(i), "scored/op")
			b.ReportMetric(float64(probed)/float64(i), "lists/op")
		})
	}
}
