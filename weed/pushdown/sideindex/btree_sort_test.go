package sideindex

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestIntKeysSortByValueThenPositionWhateverTheirRange(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	gens := map[string]func() int64{
		"few distinct":  func() int64 { return r.Int64N(5) - 2 },
		"full range":    func() int64 { return int64(r.Uint64()) },
		"small range":   func() int64 { return r.Int64N(1000) },
		"negative wide": func() int64 { return -r.Int64N(1 << 50) },
		"extremes": func() int64 {
			return []int64{-1 << 63, 1<<63 - 1, 0, -1, 1}[r.IntN(5)]
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 1023, 1024, 5000} {
			keys := make([]intKey, n)
			for i := range keys {
				keys[i] = intKey{gen(), int64(i) * 3}
			}
			want := slices.Clone(keys)
			slices.SortFunc(want, func(a, b intKey) int {
				if c := cmp.Compare(a.k, b.k); c != 0 {
					return c
				}
				return cmp.Compare(a.pos, b.pos)
			})
			if got := sortIntKeys(keys); !slices.Equal(got, want) {
				t.Fatalf("%s, %d keys: radix order differs from value-then-position order", name, n)
			}
		}
	}
	// Not in position order: still sorted by value then position.
	keys := []intKey{{5, 9}, {5, 1}, {3, 4}}
	for len(keys) < 2000 {
		keys = append(keys, intKey{r.Int64N(10), r.Int64N(1 << 20)})
	}
	got := sortIntKeys(slices.Clone(keys))
	if !slices.IsSortedFunc(got, func(a, b intKey) int {
		if c := cmp.Compare(a.k, b.k); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	}) {
		t.Fatal("keys out of position order were not sorted by value then position")
	}
}
