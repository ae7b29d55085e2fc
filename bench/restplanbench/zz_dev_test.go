package restplanbench

import (
	"context"
	"fmt"
	"github.com/apache/iceberg-go/table"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// throwaway: holds a cluster on LAKEWEED_RESTPLAN_DIR until /tmp/i29perf/hold is removed
func TestZZHold(t *testing.T) {
	if os.Getenv("ZZHOLD") == "" {
		t.Skip()
	}
	ports := harness.FreePorts(t, 2)
	args := []string{"-metricsPort=" + strconv.Itoa(ports[0]), "-debug", "-debug.port=" + strconv.Itoa(ports[1])}
	args = append(args, splitArgs(os.Getenv("ZZARGS"))...)
	c := harness.StartMini(t, harness.MiniOptions{ExtraArgs: args, Dir: os.Getenv("LAKEWEED_RESTPLAN_DIR")})
	info := fmt.Sprintf("ICEBERG=%s\nS3=%s\nCATALOG=%s\nMETRICS=%d\nDEBUG=%d\nWAREHOUSE=%s\nPID=%d\n", c.IcebergURI(), c.S3Endpoint(), c.CatalogAddr(), ports[0], ports[1], c.Warehouse, c.Proc.Cmd.Process.Pid)
	os.WriteFile("/tmp/i29perf/cluster.env", []byte(info), 0o644)
	os.WriteFile("/tmp/i29perf/hold", nil, 0o644)
	for {
		if _, err := os.Stat("/tmp/i29perf/hold"); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func splitArgs(s string) []string {
	var out []string
	for _, a := range []rune(s) {
		_ = a
	}
	if s == "" {
		return nil
	}
	cur := ""
	for _, r := range s {
		if r == ' ' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

func TestZZLoop(t *testing.T) {
	if os.Getenv("ZZLOOP") == "" {
		t.Skip()
	}
	env := map[string]string{}
	b, _ := os.ReadFile("/tmp/i29perf/cluster.env")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	ctx := context.Background()
	cat, err := lakeclient.NewIcebergCatalog(ctx, lakeclient.Endpoints{Iceberg: env["ICEBERG"], S3: env["S3"], Warehouse: env["WAREHOUSE"]})
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"bench", "events10k"}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	dport, _ := strconv.Atoi(env["DEBUG"])
	pdir := os.Getenv("ZZPROF")
	for _, q := range []query{queries[0], queries[3]} {
		stop := func() {}
		pid, _ := strconv.Atoi(env["PID"])
		lg := func(r PlanLatency) {
			t.Logf("%s %s p50 %.1f p99 %.1f files %d cpu client %.1f server %.1f", r.Query, r.Mode, r.P50Ms, r.P99Ms, r.Files, r.ClientCPUMs, r.ServerCPUMs)
		}
		r := remotePlanLatency(t, cat, ident, tbl, q, pid, func() { stop = startProfiles(t, pdir, dport, q.Name) })
		stop()
		lg(r)
		if os.Getenv("ZZPF") != "" {
			lg(remotePlanFilesLatency(t, tbl, q, pid))
		}
		if os.Getenv("ZZLOCAL") != "" {
			lg(localPlanLatency(t, tbl, q, pid))
		}
	}
	b, _ = os.ReadFile("/proc/loadavg")
	t.Logf("load %s", b)
}
