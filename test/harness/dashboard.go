package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DashboardPath is the Grafana dashboard of docker/compose.yml, relative to
// the repository root.
const DashboardPath = "docker/grafana/dashboards/pushdown.json"

var metricName = regexp.MustCompile(`\bSeaweedFS_[A-Za-z0-9_]+`)

// DashboardFamilies returns, for every metric family a Grafana dashboard's
// PromQL expressions name (histogram _bucket/_sum/_count series as their
// family), the panels naming it. A panel with an expression naming no
// SeaweedFS family is an error.
func DashboardFamilies(path string) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			names := metricName.FindAllString(t.Expr, -1)
			if len(names) == 0 {
				return nil, fmt.Errorf("%s: panel %q: expression %q names no SeaweedFS metric", path, p.Title, t.Expr)
			}
			for _, n := range names {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(n, suffix) && strings.HasSuffix(strings.TrimSuffix(n, suffix), "_seconds") {
						n = strings.TrimSuffix(n, suffix)
					}
				}
				out[n] = append(out[n], p.Title)
			}
		}
	}
	return out, nil
}
