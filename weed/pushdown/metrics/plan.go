package metrics

import (
	"slices"
	"strconv"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// ObservePlan adds a served plan's statistics: per tier what it pruned, the
// totals it started from and kept, bytes projected and planned. tiers are
// the planner's tier names; any other name counts as "other", so the label
// stays bounded whatever a planner reports.
func ObservePlan(st *pushdown_pb.PushdownStats, tiers []string) {
	if st == nil {
		return
	}
	for _, t := range st.GetTiers() {
		name := t.GetTier()
		if !slices.Contains(tiers, name) {
			name = "other"
		}
		planPruned.WithLabelValues(name, "files").Add(float64(t.GetFilesPruned()))
		planPruned.WithLabelValues(name, "row_groups").Add(float64(t.GetRowGroupsPruned()))
		planPruned.WithLabelValues(name, "pages").Add(float64(t.GetPagesPruned()))
	}
	for unit, n := range map[string][2]int64{
		"files":      {st.GetFilesTotal(), st.GetFilesPruned()},
		"row_groups": {st.GetRowGroupsTotal(), st.GetRowGroupsPruned()},
		"pages":      {st.GetPagesTotal(), st.GetPagesPruned()},
	} {
		planConsidered.WithLabelValues(unit).Add(float64(n[0]))
		planKept.WithLabelValues(unit).Add(float64(max(0, n[0]-n[1])))
	}
	planBytes.WithLabelValues("projected").Add(float64(st.GetBytesTotal()))
	planBytes.WithLabelValues("planned").Add(float64(st.GetBytesPlanned()))
	plansServed.WithLabelValues(trustLabel(st.GetTrustMode()), strconv.FormatBool(st.GetPushdownRecommended())).Inc()
}

// ObserveSlowPlan counts a plan slower than the configured threshold.
func ObserveSlowPlan() { plansSlow.Inc() }

func trustLabel(m pushdown_pb.TrustMode) string {
	if _, ok := pushdown_pb.TrustMode_name[int32(m)]; ok {
		return m.String()
	}
	return "unknown"
}
