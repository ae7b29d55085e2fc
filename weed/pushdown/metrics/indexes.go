package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	indexBuilds = counterVec("index_builds_total",
		"Side-index payload builds by service (catalog: scheduled through it; volume: run there) and result (done, failed).", "service", "result")
	indexQueue = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: Subsystem, Name: "index_build_queue_tables",
		Help: "Tables waiting for a side-index build on the catalog."})
	indexEvaluations = counterVec("index_evaluations_total",
		"Side-index probes evaluated by the volume services, by result (answered, missing, stale, corrupt, failed).", "result")
)

func init() { extra = append(extra, indexBuilds, indexQueue, indexEvaluations) }

// IndexBuilt counts n builds of service with result "done" or "failed".
func IndexBuilt(service, result string, n int64) {
	if n > 0 {
		indexBuilds.WithLabelValues(service, result).Add(float64(n))
	}
}

// IndexQueue sets the number of tables waiting for a build.
func IndexQueue(n int) { indexQueue.Set(float64(n)) }

// IndexEvaluated counts one probe by result.
func IndexEvaluated(result string) { indexEvaluations.WithLabelValues(result).Inc() }
