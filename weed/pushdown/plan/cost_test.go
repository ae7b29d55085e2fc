package plan

import (
	"context"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Deciding early, a plan the manifest-level cost model rules out (no
// predicate; a small scan in one file) stops after the manifest tier: no
// footer is read, no file planned, and the verdict is the one the full
// plan gives. A selective predicate over a large enough scan is planned;
// without DecideEarly every plan is made whatever the verdict.
func TestACostVerdictFromTheManifestsStopsThePlanBeforeAnyFooterIsRead(t *testing.T) {
	data := sortedFile(t, 2000, 500, true, false, true)
	files := []DataFile{{Path: "s3://t/f.parquet", Size: int64(len(data)), RecordCount: 2000}}
	plan := func(e predicate.Expr, early bool, o Options) (*pushdown_pb.ParquetPushdownResponse, *footer.Cache) {
		t.Helper()
		cache := footer.NewCache("t", 16<<20, memFiles{"s3://t/f.parquet": data}.open)
		resp, _, err := (&Planner{Cache: cache}).Plan(context.Background(), Request{Table: Table{Schema: tierSchema()}, Files: files, Predicate: e, Options: o, DecideEarly: early})
		if err != nil {
			t.Fatal(err)
		}
		return resp, cache
	}
	small := DefaultOptions() // 10 MiB minimum scan: the file is far smaller
	for _, tc := range []struct {
		name string
		e    predicate.Expr
		rule string
	}{
		{"no predicate", nil, "no predicate"},
		{"a small scan in one file", bound(t, xEq(7)), "planned scan below 10 MiB in at most 1 file(s)"},
	} {
		resp, cache := plan(tc.e, true, small)
		st := resp.GetStats()
		if !st.GetPlanningSkipped() || st.GetPushdownRecommended() || len(resp.GetFiles()) != 0 || !strings.HasPrefix(st.GetCostReason(), tc.rule) ||
			!strings.Contains(st.GetCostReason(), "decided before planning") || st.GetBytesPlainScan() != int64(len(data)) || st.GetFilesTotal() != 1 {
			t.Fatalf("%s, deciding early: skipped %v, recommended %v, %d files, plain scan %d, reason %q", tc.name, st.GetPlanningSkipped(), st.GetPushdownRecommended(), len(resp.GetFiles()), st.GetBytesPlainScan(), st.GetCostReason())
		}
		if cache.Peek(footer.Identity{Path: files[0].Path, Size: files[0].Size}) != nil {
			t.Fatalf("%s: a footer was read for a plan decided from the manifests", tc.name)
		}
		resp, _ = plan(tc.e, false, small)
		full := resp.GetStats()
		if full.GetPlanningSkipped() || full.GetPushdownRecommended() || len(resp.GetFiles()) != 1 || !strings.HasPrefix(full.GetCostReason(), tc.rule) {
			t.Fatalf("%s, planning fully: skipped %v, recommended %v, %d files, reason %q", tc.name, full.GetPlanningSkipped(), full.GetPushdownRecommended(), len(resp.GetFiles()), full.GetCostReason())
		}
	}
	o := DefaultOptions()
	o.MinScanBytes = 1 // any scan pays
	resp, _ := plan(bound(t, xEq(7)), true, o)
	if st := resp.GetStats(); st.GetPlanningSkipped() || !st.GetPushdownRecommended() || len(resp.GetFiles()) != 1 || st.GetBytesPlanned() >= st.GetBytesPlainScan() {
		t.Fatalf("a selective point lookup, deciding early: skipped %v, recommended %v, %d files, planned %d of a %d-byte plain scan (%s)",
			st.GetPlanningSkipped(), st.GetPushdownRecommended(), len(resp.GetFiles()), st.GetBytesPlanned(), st.GetBytesPlainScan(), st.GetCostReason())
	}
}
