// Package metrics holds the Prometheus families of the pushdown services,
// registered on SeaweedFS's own registry (stats.Gather) so they appear on
// the /metrics endpoint every weed process already serves (-metricsPort).
//
//	gRPC call ──▶ grpcutil interceptor ──▶ rpc_requests_total{service,method,code}
//	                                    └▶ rpc_duration_seconds{service,method}
//	Plan response stats ──▶ ObservePlan ──▶ plan_*_total{tier,...}
//	access.Guard refusal ──▶ Refused ──▶ access_refusals_total{reason}
//	scrape ──▶ sources (caches, reads) ──▶ cache_*{service,cache}, volume_read_bytes_total{source}
//
// Labels are a small fixed set: service and method names of the pushdown
// protos, gRPC codes, planner tier names, cache names, refusal reasons.
// Never a table, file or identity name: planning 1,000 tables adds no series.
//
// Side indexes (issue 10) add their families here when they land: index
// builds done/failed, build queue length, payloads by state, the payload
// cache (as a cache source). Until then nothing is registered for them.
package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Namespace and Subsystem prefix every family: SeaweedFS_pushdown_*.
const (
	Namespace = "SeaweedFS"
	Subsystem = "pushdown"
)

var (
	rpcRequests = counterVec("rpc_requests_total",
		"Pushdown gRPC requests by service (catalog, volume), method and gRPC code.", "service", "method", "code")
	rpcDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "rpc_duration_seconds",
		Help:    "Pushdown gRPC request latency by service and method.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14), // 0.5 ms .. ~75 s
	}, []string{"service", "method"})

	planPruned = counterVec("plan_pruned_total",
		"Files, row groups and pages pruned by each planner tier (unit: files, row_groups, pages).", "tier", "unit")
	planConsidered = counterVec("plan_considered_total",
		"Files, row groups and pages the served plans started from (unit: files, row_groups, pages).", "unit")
	planKept = counterVec("plan_kept_total",
		"Files, row groups and pages the served plans kept (unit: files, row_groups, pages).", "unit")
	planBytes = counterVec("plan_bytes_total",
		"Bytes of the projected columns before pruning (kind=projected) and bytes the plans say to read (kind=planned).", "kind")
	plansServed = counterVec("plans_total",
		"Plans served by trust mode and whether pushdown was recommended.", "trust_mode", "recommended")
	plansSlow = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: Subsystem, Name: "plans_slow_total",
		Help: "Plans that took longer than -pushdown.slowPlanMs.",
	})

	refusals = counterVec("access_refusals_total",
		"Requests refused PERMISSION_DENIED by reason ("+strings.Join(Reasons, ", ")+").", "reason")
)

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: Subsystem, Name: name, Help: help}, labels)
}

// extra are families defined in other files of this package.
var extra []prometheus.Collector

// Register adds every family of this package to reg (again: a no-op).
func Register(reg prometheus.Registerer) {
	for _, c := range append([]prometheus.Collector{rpcRequests, rpcDuration, planPruned, planConsidered, planKept, planBytes,
		plansServed, plansSlow, refusals, sources}, extra...) {
		_ = reg.Register(c)
	}
}

// ObserveRPC counts one finished call of fullMethod ("/pkg.PushdownCatalog/Plan").
func ObserveRPC(fullMethod string, code codes.Code, took time.Duration) {
	service, method := SplitMethod(fullMethod)
	rpcRequests.WithLabelValues(service, method, code.String()).Inc()
	rpcDuration.WithLabelValues(service, method).Observe(took.Seconds())
}

// SplitMethod turns "/pushdown_pb.PushdownCatalog/Plan" into ("catalog",
// "Plan"). A name that is not a method of the pushdown services is
// ("unknown", "unknown"): interceptors see only registered methods, but the
// admission tap counts calls it refuses before the method is looked up,
// and a client that may not call at all must not mint label values (each
// a series kept forever) with made-up paths.
func SplitMethod(fullMethod string) (service, method string) {
	if !knownMethods[fullMethod] {
		return "unknown", "unknown"
	}
	svc, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if i := strings.LastIndexByte(svc, '.'); i >= 0 {
		svc = svc[i+1:]
	}
	return strings.ToLower(strings.TrimPrefix(svc, "Pushdown")), method
}

// knownMethods are the full names of the pushdown services' methods.
var knownMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range []grpc.ServiceDesc{pushdown_pb.PushdownCatalog_ServiceDesc, pushdown_pb.PushdownVolume_ServiceDesc} {
		for _, x := range d.Methods {
			m["/"+d.ServiceName+"/"+x.MethodName] = true
		}
		for _, x := range d.Streams {
			m["/"+d.ServiceName+"/"+x.StreamName] = true
		}
	}
	return m
}()

// Refusal reasons: why a request was refused PERMISSION_DENIED.
const (
	ReasonUnsigned        = "unsigned"         // no credentials where S3 identities are required
	ReasonBadSignature    = "bad_signature"    // an S3 signature that was not accepted
	ReasonToken           = "token"            // a bearer token that was not accepted
	ReasonScope           = "scope"            // outside a service token's allowed prefixes
	ReasonIdentity        = "identity"         // an S3 identity without read permission on a file
	ReasonTable           = "table"            // an S3 identity without read permission on a table
	ReasonNotTableBucket  = "not_table_bucket" // a file outside every table bucket
	ReasonInvalidLocation = "invalid_location" // a location that is not an object in a bucket
	ReasonTrust           = "trust"            // client-resolved data files the trust mode refuses
)

// Reasons lists every refusal reason (the label's whole value set).
var Reasons = []string{ReasonUnsigned, ReasonBadSignature, ReasonToken, ReasonScope, ReasonIdentity, ReasonTable,
	ReasonNotTableBucket, ReasonInvalidLocation, ReasonTrust}

// Refused counts err as a refusal for reason (one of Reasons) when it is
// one (PERMISSION_DENIED) and returns it unchanged.
func Refused(reason string, err error) error {
	if err != nil && perr.KindOf(err) == perr.PermissionDenied {
		refusals.WithLabelValues(reason).Inc()
	}
	return err
}
