package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	indexBuilds = counterVec("index_builds_total",
		"Side-index payload builds by service (catalog: scheduled through it; volume: run there) and result (done, failed).", "service", "result")
	indexQueue = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Subsystem: Subsystem, Name: "index_build_queue_tables",
		Help: "Tables waiting for a side-index build on the catalog."})
	indexEvaluations = counterVec("index_evaluations_total",
		"Side-index probes evaluated by the volume services, by result (answered, missing, stale, corrupt, failed; skipped: a LIMIT's earlier probes held its rows).", "result")
)

// IndexPayloads reports the side-index registry entries by state (set by
// the catalog service of the process; nil: none).
var IndexPayloads func() map[string]int64

var indexPayloadsDesc = prometheus.NewDesc(Namespace+"_"+Subsystem+"_index_payloads", "Side-index registry entries of the catalog by state (building, committed, stale, missing, corrupt, failed).", []string{"state"}, nil)

type payloadStates struct{}

func (payloadStates) Describe(ch chan<- *prometheus.Desc) { ch <- indexPayloadsDesc }
func (payloadStates) Collect(ch chan<- prometheus.Metric) {
	if IndexPayloads == nil {
		return
	}
	for state, n := range IndexPayloads() {
		ch <- prometheus.MustNewConstMetric(indexPayloadsDesc, prometheus.GaugeValue, float64(n), state)
	}
}

func init() { extra = append(extra, indexBuilds, indexQueue, indexEvaluations, payloadStates{}) }

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
