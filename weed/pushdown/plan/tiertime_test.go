package plan

import (
	"testing"
	"time"
)

// The footer tiers' time, summed over the workers that ran them in
// parallel, is reported as each tier's share of the phase's wall time: no
// tier reads longer than the phase, and a phase its workers did not fill
// keeps their times as they are.
func TestATiersTimeIsItsShareOfTheParallelPhasesWallTime(t *testing.T) {
	tiers := map[string]*tierCounter{TierFooter: {dur: time.Millisecond}, TierBloom: {}, TierPageIndex: {}}
	addWallShares(tiers, map[string]time.Duration{TierFooter: 60 * time.Millisecond, TierBloom: 20 * time.Millisecond, TierPageIndex: 40 * time.Millisecond}, 30*time.Millisecond)
	if tiers[TierFooter].dur != 16*time.Millisecond || tiers[TierBloom].dur != 5*time.Millisecond || tiers[TierPageIndex].dur != 10*time.Millisecond {
		t.Fatalf("shares of 30 ms: footer %v (1 ms before), bloom %v, page index %v; want 16 ms, 5 ms, 10 ms", tiers[TierFooter].dur, tiers[TierBloom].dur, tiers[TierPageIndex].dur)
	}
	tiers = map[string]*tierCounter{TierFooter: {}}
	addWallShares(tiers, map[string]time.Duration{TierFooter: 4 * time.Millisecond}, 10*time.Millisecond)
	if tiers[TierFooter].dur != 4*time.Millisecond {
		t.Fatalf("a phase its workers did not fill: %v, want 4 ms", tiers[TierFooter].dur)
	}
}
