package predicate

import (
	"math/rand/v2"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// A long IN list is looked up by binary search; every answer must be the
// linear walk's (the definition), for ints, unsigned ints and byte strings,
// with duplicates, and for bounds as the pruning tiers ask.
func TestALongInListAnswersExactlyAsTheLinearWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	gens := map[string]func() value.Value{
		"int":   func() value.Value { return value.OfInt(r.Int64N(400) - 200) },
		"uint":  func() value.Value { return value.Value{K: value.Uint, U: r.Uint64N(400)} },
		"bytes": func() value.Value { return value.OfString(string(rune('a'+r.IntN(20))) + string(rune('a'+r.IntN(20)))) },
	}
	for name, gen := range gens {
		for trial := 0; trial < 50; trial++ {
			lits := make([]value.Value, minSortedIn+r.IntN(200))
			for i := range lits {
				lits[i] = gen()
			}
			sorted := &Leaf{Op: OpIn, Lits: lits, in: newSortedIn(lits)}
			linear := &Leaf{Op: OpIn, Lits: lits}
			if sorted.in == nil || sorted.in.sorted == nil {
				t.Fatalf("%s: %d comparable literals were not sorted", name, len(lits))
			}
			for probe := 0; probe < 200; probe++ {
				v := gen()
				for _, sem := range []Semantics{IEEE, TotalOrder} {
					if a, b := evalLeaf(sorted, v, false, sem), evalLeaf(linear, v, false, sem); a != b {
						t.Fatalf("%s: %v IN (%d literals): sorted %v, linear %v", name, v, len(lits), a, b)
					}
				}
				lo, hi := v, gen()
				if c, _ := value.Compare(lo, hi); c > 0 {
					lo, hi = hi, lo
				}
				want := false
				for _, l := range lits {
					if c1, _ := value.Compare(lo, l); c1 <= 0 {
						if c2, _ := value.Compare(l, hi); c2 <= 0 {
							want = true
						}
					}
				}
				if got, ok := sorted.AnyWithin(lo, hi); !ok || got != want {
					t.Fatalf("%s: a literal within [%v, %v]: %v (handled %v), want %v", name, lo, hi, got, ok, want)
				}
			}
		}
	}
}

func TestShortFloatOrMixedInListsAreWalked(t *testing.T) {
	floats := make([]value.Value, 40)
	for i := range floats {
		floats[i] = value.OfFloat(float64(i))
	}
	if newSortedIn(floats) != nil {
		t.Fatal("a float IN list was sorted: NaN and signed zeros compare per semantics")
	}
	if newSortedIn([]value.Value{value.OfInt(1), value.OfInt(2)}) != nil {
		t.Fatal("a two-literal list was sorted")
	}
}
