// Package docker_test checks the Grafana dashboard of the compose setup
// against the metric families the pushdown services register.
package docker_test

import (
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakeweed/seaweedfs/test/harness"
	pdserver "github.com/lakeweed/seaweedfs/weed/server"
)

// recorder is a Registerer that keeps what is registered on it.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registered returns every family name the pushdown services register on
// SeaweedFS's registry (from the collectors' descriptions, so families
// without series yet count too).
func registered(t *testing.T) map[string]bool {
	r := &recorder{}
	pdserver.RegisterMetricsOn(r)
	names := map[string]bool{}
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names[m[1]] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d families registered: %v", len(names), names)
	}
	return names
}

// Every PromQL expression of the dashboard names only families the
// pushdown services register (the integration test
// TestMetricsEndpointCountsWhatTheWorkloadDid checks the same against a
// real cluster's /metrics).
func TestDashboardQueriesNameOnlyRegisteredFamilies(t *testing.T) {
	used, err := harness.DashboardFamilies("grafana/dashboards/pushdown.json")
	if err != nil {
		t.Fatal(err)
	}
	have := registered(t)
	for name, panels := range used {
		if !have[name] {
			t.Errorf("dashboard panels %q query %s, which no pushdown service exports", panels, name)
		}
	}
	if len(used) < 10 {
		t.Fatalf("the dashboard queries only %d families", len(used))
	}
}
