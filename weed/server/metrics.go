package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/metrics"
	"github.com/seaweedfs/seaweedfs/weed/stats"
)

// RegisterMetrics adds every pushdown family to SeaweedFS's registry, which
// the process serves on /metrics (-metricsPort). Safe to call repeatedly.
func RegisterMetrics() { RegisterMetricsOn(stats.Gather) }

// RegisterMetricsOn adds every pushdown family to reg.
func RegisterMetricsOn(reg prometheus.Registerer) {
	metrics.Register(reg)
	footer.Register(reg)
	deletes.Register(reg)
	freshness.Register(reg)
}
