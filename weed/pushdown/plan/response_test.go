package plan

import (
	"math/rand/v2"
	"testing"
)

// TestCoalescedRangesCoverEveryRangeAndReadAtMostAFifthMore merges random
// ranges and checks every input byte is covered, merged ranges never
// overlap, and the bytes read stay within 1.2× the bytes asked for.
func TestCoalescedRangesCoverEveryRangeAndReadAtMostAFifthMore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := 0; trial < 2000; trial++ {
		var rs []byteRange
		covered := map[int64]bool{}
		for i := 0; i < 1+r.IntN(30); i++ {
			br := byteRange{Off: r.Int64N(4000), Len: 1 + r.Int64N(300)}
			rs = append(rs, br)
			for b := br.Off; b < br.Off+br.Len; b++ {
				covered[b] = true
			}
		}
		out := Coalesce(rs, int64(r.IntN(400)))
		var read int64
		for i, m := range out {
			read += m.Len
			if i > 0 && m.Off < out[i-1].Off+out[i-1].Len {
				t.Fatalf("merged ranges overlap: %v", out)
			}
		}
		for b := range covered {
			found := false
			for _, m := range out {
				if b >= m.Off && b < m.Off+m.Len {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("byte %d of %v is not in the merged ranges %v", b, rs, out)
			}
		}
		if float64(read) > (1+MaxHoleFraction)*float64(len(covered))+1e-9 {
			t.Fatalf("merged ranges read %d bytes for %d asked (%v → %v)", read, len(covered), rs, out)
		}
	}
	if got := Coalesce([]byteRange{{0, 100}, {110, 100}, {1000, 10}}, 64); len(got) != 2 || got[0] != (byteRange{0, 210}) {
		t.Fatalf("a 10-byte hole between 100-byte ranges is merged, a far range is not: got %v", got)
	}
}
