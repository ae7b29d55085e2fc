package server

import (
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/seaweedfs/seaweedfs/weed/stats"
)

// RegisterMetrics adds every pushdown family to SeaweedFS's registry, which
// the process serves on /metrics (-metricsPort). Safe to call repeatedly.
func RegisterMetrics() {
	metrics.Register(stats.Gather)
	footer.Register(stats.Gather)
	deletes.Register(stats.Gather)
	freshness.Register(stats.Gather)
}
