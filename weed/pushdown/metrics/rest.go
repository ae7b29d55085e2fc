package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	restRequests = counterVec("rest_requests_total",
		"Iceberg REST scan-planning requests by endpoint (plan, fetch_result, cancel, tasks) and HTTP status.", "endpoint", "status")
	restDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "rest_duration_seconds",
		Help:    "Iceberg REST scan-planning request latency by endpoint.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
	}, []string{"endpoint"})
)

func init() { extra = append(extra, restRequests, restDuration) }

// ObserveREST counts one answered scan-planning request of endpoint (a
// fixed name) with its HTTP status.
func ObserveREST(endpoint string, status int, took time.Duration) {
	restRequests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	restDuration.WithLabelValues(endpoint).Observe(took.Seconds())
}
