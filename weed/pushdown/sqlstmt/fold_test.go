package sqlstmt

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// sumOf is an accumulator's integer SUM, whichever way it holds it.
func sumOf(ac *acc) *big.Int {
	if ac.big != nil {
		return ac.big
	}
	return big.NewInt(ac.i)
}

// Folding a record's integers through one array cell a group gives every
// group the accumulator folding them row by row gives: sums past int64
// either way (values near its bounds, both signs), rows counted, MIN and
// MAX, accumulators that already held values from earlier records.
func TestFoldingIntegersByGroupEqualsFoldingThemRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 30))
	for round := range 300 {
		ng := 1 + r.IntN(40)
		rows := ng + r.IntN(2000)
		for _, f := range []Func{Sum, Avg, Min, Max} {
			dense, byRow := &Aggregator{}, &Aggregator{}
			for range ng {
				dense.groups = append(dense.groups, &group{accs: make([]acc, 1)})
				byRow.groups = append(byRow.groups, &group{accs: make([]acc, 1)})
			}
			for batch := range 3 {
				v := make([]int64, rows)
				gids := make([]int32, rows)
				for i := range v {
					switch r.IntN(4) {
					case 0:
						v[i] = math.MaxInt64 - r.Int64N(1000)
					case 1:
						v[i] = math.MinInt64 + r.Int64N(1000)
					default:
						v[i] = r.Int64N(2000) - 1000
					}
					if round%2 == 0 {
						v[i] = max(v[i], 0) // sums that only grow
					}
					gids[i] = int32(r.IntN(ng))
				}
				dense.foldIntsDense(0, f, v, gids, ng)
				for i, g := range gids {
					byRow.foldInt(&byRow.groups[g].accs[0], f, v[i])
				}
				for g := range ng {
					d, w := &dense.groups[g].accs[0], &byRow.groups[g].accs[0]
					if d.n != w.n {
						t.Fatalf("round %d %v batch %d group %d: %d rows folded, row by row %d", round, f, batch, g, d.n, w.n)
					}
					switch f {
					case Sum, Avg:
						if sumOf(d).Cmp(sumOf(w)) != 0 {
							t.Fatalf("round %d %v batch %d group %d: sum %s, row by row %s", round, f, batch, g, sumOf(d), sumOf(w))
						}
					default:
						if w.n > 0 && d.v != w.v {
							t.Fatalf("round %d %v batch %d group %d: %v, row by row %v", round, f, batch, g, d.v, w.v)
						}
					}
				}
			}
		}
	}
}
