package sideindexbench

// The volume-side build's scaling from one core to two: the same table
// loaded into a cluster started with GOMAXPROCS=1 and one with
// GOMAXPROCS=2, every file built by one BuildIndexes call per kind, three
// runs each (alternating the two clusters, so a burst of load on the
// shared machine hits both). Run with `BENCH=sideindex-build
// ./scripts/bench.sh` (LAKEWEED_BENCH=1); rows with LAKEWEED_BENCH_ROWS.
//
//	load ×2 (1 and 2 cores) ─▶ per run, per kind: BuildIndexes on 1 core, then on 2
//	  ─▶ wall s, rows/s, summed build CPU ─▶ bench/results/sideindex_build.md

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/bench/benchutil"
	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

func TestSideIndexBuildScalingBenchmark(t *testing.T) {
	if os.Getenv("LAKEWEED_BENCH") == "" {
		t.Skip("benchmark: run with `BENCH=sideindex-build ./scripts/bench.sh` (LAKEWEED_BENCH=1)")
	}
	rows := int64(2_000_000)
	if v, err := strconv.ParseInt(os.Getenv("LAKEWEED_BENCH_ROWS"), 10, 64); err == nil && v > 0 {
		rows = v
	}
	const runs = 3
	spec := specOf(rows, demo.IndexedNone)
	kinds := [][2]string{{"id", "btree"}, {"tenant_id", "bloom"}, {"status", "bitmap"}, {"ts", "page_index"}}
	var clusters [2]*harness.Cluster
	for i, procs := range []string{"1", "2"} {
		clusters[i] = harness.StartMini(t, harness.MiniOptions{Env: []string{"GOMAXPROCS=" + procs}})
		load(t, clusters[i], "bench.build", spec)
	}
	type figure struct{ wall, busy [2][]float64 }
	figs := make([]figure, len(kinds))
	for r := 0; r < runs; r++ {
		for k, kc := range kinds {
			for i, c := range clusters {
				w, b := benchutil.BuildSeconds(t, c, "bench.build", kc[0], kc[1])
				figs[k].wall[i] = append(figs[k].wall[i], w)
				figs[k].busy[i] = append(figs[k].busy[i], b)
				t.Logf("run %d %s(%s) %d core(s): wall %.2fs, build CPU %.2fs", r+1, kc[1], kc[0], i+1, w, b)
			}
		}
	}
	for _, c := range clusters {
		c.Proc.Stop(20 * time.Second)
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	var md strings.Builder
	fmt.Fprintf(&md, "# Side-index build: one core against two\n\n`BENCH=sideindex-build ./scripts/bench.sh` on the %d-core development machine (shared, noisy; load average at the end: %s), "+
		"`weed mini -pushdown` started with GOMAXPROCS=1 and with GOMAXPROCS=2, %d demo rows in %d files written with `-indexed none`. "+
		"Each figure: one volume BuildIndexes call over every file (the median of three inside benchutil.BuildSeconds); %d runs alternating the two clusters. "+
		"Speed-up: the ratio of the run medians; spread: the ratios of each run.\n\n", runtime.NumCPU(), strings.TrimSpace(string(load1)), rows, spec.Files, runs)
	fmt.Fprintf(&md, "| index | 1 core wall s | 2 cores wall s | speed-up (median) | speed-up per run | rows/s on 2 cores | build CPU s (1 / 2 cores) |\n| --- | ---: | ---: | ---: | --- | ---: | ---: |\n")
	for k, kc := range kinds {
		f := figs[k]
		var per []string
		for r := 0; r < runs; r++ {
			per = append(per, fmt.Sprintf("%.2f×", f.wall[0][r]/f.wall[1][r]))
		}
		w1, w2 := benchutil.Median(f.wall[0]), benchutil.Median(f.wall[1])
		fmt.Fprintf(&md, "| %s(%s) | %.2f | %.2f | %.2f× | %s | %.0f | %.2f / %.2f |\n", kc[1], kc[0], w1, w2, w1/w2, strings.Join(per, " / "),
			float64(rows)/w2, benchutil.Median(f.busy[0]), benchutil.Median(f.busy[1]))
		t.Logf("%s(%s): 1 core %.2fs, 2 cores %.2fs, speed-up %.2fx (%s)", kc[1], kc[0], w1, w2, w1/w2, strings.Join(per, " "))
	}
	if err := os.WriteFile(filepath.Join("..", "results", "sideindex_build.md"), []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
