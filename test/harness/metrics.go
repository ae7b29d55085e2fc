package harness

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// WithMetrics makes the cluster o starts serve Prometheus metrics (weed
// mini -metricsPort) and returns the URL of its /metrics endpoint.
func WithMetrics(t testing.TB, o *MiniOptions) string {
	t.Helper()
	port := FreePorts(t, 1)[0]
	o.ExtraArgs = append(o.ExtraArgs, "-metricsPort="+strconv.Itoa(port), "-metricsIp=127.0.0.1")
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
}

// Families is a scrape of a /metrics endpoint by family name.
type Families map[string]*dto.MetricFamily

// Scrape reads and parses the Prometheus text exposition at url.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the metrics of %s: %v", url, err)
	}
	return mfs
}

// Value is the value of the family's series whose labels include all of
// labels (name, value pairs), summed over matching series; ok is false when
// no series matches. Histograms count observations.
func (f Families) Value(family string, labels ...string) (v float64, ok bool) {
	mf := f[family]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		ok = true
		switch {
		case m.Counter != nil:
			v += m.GetCounter().GetValue()
		case m.Gauge != nil:
			v += m.GetGauge().GetValue()
		case m.Histogram != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			v += m.GetUntyped().GetValue()
		}
	}
	return v, ok
}

// Series is how many series the family has.
func (f Families) Series(family string) int {
	if mf := f[family]; mf != nil {
		return len(mf.GetMetric())
	}
	return 0
}
