package sideindex

import (
	"context"
	"testing"
)

// BenchmarkIVFBuildOfAWholeFile times what a volume does for one file:
// read the vector column, train and assign, write the Arrow payload. Run
// with -cpu 1,2 for the build's scaling:
//
//	go test -run - -bench IVFBuildOfAWholeFile -cpu 1,2 ./weed/pushdown/sideindex/
func BenchmarkIVFBuildOfAWholeFile(b *testing.B) {
	f := vectorFile(b, 100_000, 5)
	for _, kind := range []string{"ivf", "ivf_pq"} {
		k, _ := Lookup(kind)
		in := f.vectorInput(b, 2, "emb", nil)
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := k.Build(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
