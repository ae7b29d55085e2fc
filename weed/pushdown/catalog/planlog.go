package catalog

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// planCounters are the catalog's own figures of the plans since start,
// shown by Status (weed pushdown status) for operators without Prometheus.
type planCounters struct {
	served, failed, slow atomic.Int64
	latency              metrics.Latencies // of served plans
}

// Plan answers what a connector must read for a query over a table (see
// plan), then accounts for it: metrics, the since-start figures of Status,
// and one log line (V(1); V(0) when slower than Config.SlowPlan).
func (s *Service) Plan(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	start := time.Now()
	resp, err := s.plan(ctx, req)
	took := time.Since(start)
	slow := s.Config.SlowPlan > 0 && took > s.Config.SlowPlan
	if err != nil {
		s.plans.failed.Add(1)
		if slow || bool(glog.V(1)) {
			glog.Infof("pushdown: plan %s failed after %v: %s: %s", perr.Quote(req.GetTable()), took.Round(time.Microsecond),
				status.Code(grpcutil.ToStatus(err)), firstLine(err.Error()))
		}
		return nil, err
	}
	s.plans.served.Add(1)
	s.plans.latency.Observe(took)
	metrics.ObservePlan(resp.GetStats(), plan.Tiers)
	if slow {
		s.plans.slow.Add(1)
		metrics.ObserveSlowPlan()
		glog.Infof("pushdown: SLOW plan (over -pushdown.slowPlanMs=%d) %s", s.Config.SlowPlan.Milliseconds(), planLine(req, resp, took))
	} else if bool(glog.V(1)) {
		glog.Infof("pushdown: plan %s", planLine(req, resp, took))
	}
	if req.GetNestByFile() {
		nestByFile(resp)
	}
	return resp, nil
}

// nestByFile lists the plan's row groups, pages and byte ranges in the
// PlannedFile each names (the response's own copies: ownFiles) and empties
// the flat lists: the shape a client asking nest_by_file reads without
// regrouping. The entries keep their file names (they may be the
// planner's memoized messages, shared by other responses). Entries naming
// no planned file (none are made) are dropped, as a reader of the flat
// lists ignores them.
func nestByFile(resp *pushdown_pb.ParquetPushdownResponse) {
	at := make(map[string]*pushdown_pb.PlannedFile, len(resp.GetFiles()))
	for _, pf := range resp.GetFiles() {
		at[pf.GetFile()] = pf
	}
	for _, rg := range resp.GetRowGroups() {
		if pf := at[rg.GetFile()]; pf != nil {
			pf.RowGroups = append(pf.RowGroups, rg)
		}
	}
	for _, pg := range resp.GetPages() {
		if pf := at[pg.GetFile()]; pf != nil {
			pf.Pages = append(pf.Pages, pg)
		}
	}
	for _, fr := range resp.GetFileRanges() {
		if pf := at[fr.GetFile()]; pf != nil {
			pf.Ranges = append(pf.Ranges, fr)
		}
	}
	resp.RowGroups, resp.Pages, resp.FileRanges = nil, nil, nil
}

// RefusedBeforeRead counts a call refused from its metadata, before its
// body was read (grpcutil.Admission): a refused Plan is a failed plan.
func (s *Service) RefusedBeforeRead(method string) {
	if method == "Plan" {
		s.plans.failed.Add(1)
	}
}

// planLine describes a served plan: what it kept of what, what it costs.
// The table is the client's string, so it is quoted (a short prefix).
func planLine(req *pushdown_pb.ParquetPushdownRequest, resp *pushdown_pb.ParquetPushdownResponse, took time.Duration) string {
	st := resp.GetStats()
	kept := func(total, pruned int64) string { return fmt.Sprintf("%d/%d", total-pruned, total) }
	return fmt.Sprintf("table=%s snapshot=%d files=%s row_groups=%s pages=%s bytes_planned=%d/%d took=%v trust=%s recommended=%t indexes_missing=%s",
		perr.Quote(req.GetTable()), resp.GetSnapshotId(),
		kept(st.GetFilesTotal(), st.GetFilesPruned()), kept(st.GetRowGroupsTotal(), st.GetRowGroupsPruned()),
		kept(st.GetPagesTotal(), st.GetPagesPruned()), st.GetBytesPlanned(), st.GetBytesTotal(),
		took.Round(time.Microsecond), TrustModeName(st.GetTrustMode()), st.GetPushdownRecommended(), listSome(st.GetIndexesMissing(), 3))
}

// listSome lists at most n items and how many more there are.
func listSome(items []string, n int) string {
	if len(items) == 0 {
		return "none"
	}
	if len(items) <= n {
		return "[" + strings.Join(items, "; ") + "]"
	}
	return fmt.Sprintf("[%s; and %d more]", strings.Join(items[:n], "; "), len(items)-n)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		cut := 300
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// addPlanStatus fills the plan figures of Status.
func (s *Service) addPlanStatus(out *pushdown_pb.CatalogStatus) {
	out.PlansServed = s.plans.served.Load()
	out.PlansFailed = s.plans.failed.Load()
	out.PlansSlow = s.plans.slow.Load()
	out.SlowPlanMs = s.Config.SlowPlan.Milliseconds()
	out.PlanP50Micros = s.plans.latency.Quantile(0.50).Microseconds()
	out.PlanP99Micros = s.plans.latency.Quantile(0.99).Microseconds()
	out.IndexHealth = s.builds.health() + "; " + s.maint.health()
}
