package metrics

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestEveryValueFallsInABucketWhoseBoundIsWithinAnEighthAboveIt(t *testing.T) {
	for _, us := range []uint64{0, 1, 7, 15, 16, 17, 100, 999, 1000, 12345, 1 << 20, 1<<30 + 12345, 1 << 40} {
		i := bucketOf(us)
		up := upperOf(i)
		if up < us {
			t.Fatalf("%d µs: bucket %d bound %d is below it", us, i, up)
		}
		if float64(up-us) > float64(us)/8+1 {
			t.Fatalf("%d µs: bucket %d bound %d is more than an eighth above it", us, i, up)
		}
		if i > 0 && upperOf(i-1) >= us {
			t.Fatalf("%d µs: belongs in an earlier bucket than %d", us, i)
		}
	}
}

func TestQuantilesOfAThousandPlansAreWithinTheBucketError(t *testing.T) {
	var l Latencies
	if l.Quantile(0.5) != 0 {
		t.Fatal("quantile of nothing is not 0")
	}
	for i := 1; i <= 1000; i++ {
		l.Observe(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := l.Quantile(c.q)
		if got < c.want || got > c.want+c.want/8 {
			t.Fatalf("p%v = %v, want %v (+12.5%%)", c.q*100, got, c.want)
		}
	}
	if l.Count() != 1000 {
		t.Fatalf("count %d", l.Count())
	}
}

func TestMethodNamesBecomeServiceAndMethodLabels(t *testing.T) {
	for in, want := range map[string][2]string{
		"/pushdown_pb.PushdownCatalog/Plan":          {"catalog", "Plan"},
		"/pushdown_pb.PushdownVolume/ComputeDeletes": {"volume", "ComputeDeletes"},
		"garbage":                                {"unknown", "unknown"},
		"/pushdown_pb.PushdownCatalog/MadeUp":    {"unknown", "unknown"},
		"/evil.Service/Plan":                     {"unknown", "unknown"},
		"/pushdown_pb.PushdownVolume/ScanRows/x": {"unknown", "unknown"},
	} {
		s, m := SplitMethod(in)
		if s != want[0] || m != want[1] {
			t.Fatalf("%s: got %s %s", in, s, m)
		}
	}
}

func TestPlanTiersOutsideThePlannersListCountAsOther(t *testing.T) {
	ObservePlan(&pushdown_pb.PushdownStats{FilesTotal: 4, FilesPruned: 1, Tiers: []*pushdown_pb.TierStats{
		{Tier: "manifest", FilesPruned: 1}, {Tier: "made-up-tier", RowGroupsPruned: 2}}}, []string{"manifest"})
	if got := testutil.ToFloat64(planPruned.WithLabelValues("other", "row_groups")); got != 2 {
		t.Fatalf("other row groups %v", got)
	}
	if got := testutil.ToFloat64(planKept.WithLabelValues("files")); got != 3 {
		t.Fatalf("kept files %v", got)
	}
	ObserveRPC("/pushdown_pb.PushdownCatalog/Plan", codes.NotFound, time.Millisecond)
	if got := testutil.ToFloat64(rpcRequests.WithLabelValues("catalog", "Plan", "NotFound")); got != 1 {
		t.Fatalf("requests %v", got)
	}
}

func TestSourcesOfTheSameServiceAndCacheAreSummedAtScrape(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sources)
	stat := func(h int64) func() []*pushdown_pb.CacheStats {
		return func() []*pushdown_pb.CacheStats {
			return []*pushdown_pb.CacheStats{{Name: "deletes", Hits: h, Entries: 1}}
		}
	}
	r1 := AddSource(Source{Service: "volume", Caches: stat(2), Reads: func() (int64, int64, int64) { return 10, 1, 0 }})
	r2 := AddSource(Source{Service: "volume", Caches: stat(3)})
	defer r2()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			got[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = v
		}
	}
	if got["SeaweedFS_pushdown_cache_hits_total/deletes"] != 5 || got["SeaweedFS_pushdown_cache_entries/deletes"] != 2 {
		t.Fatalf("summed cache series: %v", got)
	}
	if got["SeaweedFS_pushdown_volume_read_bytes_total/local"] != 10 {
		t.Fatalf("read bytes: %v", got)
	}
	r1()
	if n := testutil.CollectAndCount(sources, "SeaweedFS_pushdown_volume_read_bytes_total"); n != 0 {
		t.Fatalf("removed source still reports reads: %d series", n)
	}
}

func TestIndexPayloadStatesAreReadAtScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	Register(reg)
	IndexPayloads = func() map[string]int64 { return map[string]int64{"committed": 3, "stale": 1} }
	defer func() { IndexPayloads = nil }()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "SeaweedFS_pushdown_index_payloads" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if got["committed"] != 3 || got["stale"] != 1 || len(got) != 2 {
		t.Fatalf("index_payloads = %v", got)
	}
}
