package colfilter

import (
	"math/rand"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// The LIKE kernel matches exactly the values predicate.Like matches, over
// random patterns of literal runs, '%', escapes and multi-byte runes and
// values with invalid UTF-8; patterns it cannot decide by byte search
// ('_', invalid UTF-8) get no kernel.
func TestTheLikeKernelMatchesExactlyTheValuesPredicateLikeMatches(t *testing.T) {
	pieces := []string{"%", "%", "_", "a", "b", "ab", "ba", "€", "\\%", "\\_", "\\", "\xff", "\x82"}
	values := []string{"", "a", "b", "ab", "ba", "aba", "abab", "bab", "€", "a€b", "\xe2\x82", "\xe2\x82\xac", "a\xffb", "%", "_", "a%b", "\\", "a\\"}
	decided := 0
	for seed := int64(0); seed < 20000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var p []byte
		for k := rng.Intn(7); k > 0; k-- {
			p = append(p, pieces[rng.Intn(len(pieces))]...)
		}
		m := compileLike(p)
		if m == nil {
			continue
		}
		decided++
		for _, v := range values {
			if got, want := m.match(v), predicate.Like([]byte(v), p, false); got != want {
				t.Fatalf("%q LIKE %q: kernel %v, predicate.Like %v", v, p, got, want)
			}
		}
	}
	if decided < 5000 {
		t.Fatalf("the kernel decided %d of 20000 patterns", decided)
	}
}
