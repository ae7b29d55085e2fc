#!/usr/bin/env bash
# `make bench`: benchmarks against real clusters (not timed tests).
# Results: bench/results/*.json and *.md.
#   LAKEWEED_BENCH_QUICK=1  skips the 10,000-file planner table and the peer benchmark's big table
#   LAKEWEED_PLAN_BIG_FILES=N  files of the planner's largest table (default 10,000)
#   LAKEWEED_PLAN_PROFILE_DIR=D CPU profiles of the warm plans of the largest table (plan-<query>.pprof)
#   LAKEWEED_BENCH_ROWS=N   rows per table of the peer benchmark (default 1,000,000)
#   LAKEWEED_PEER_BIG_ROWS=N / LAKEWEED_PEER_BIG_FILES=N  the peer benchmark's big table
#                           (default 10,000,000 rows in 80 files; 0 rows skips it)
#   BENCH=plan|deletes|peer|sideindex|sideindex-build|sideindex-igo|vector|kinds|restplan|scan|aggregates runs one of them
#   LAKEWEED_RESTPLAN_BIG_FILES=N  files of the scan-planning benchmark's latency table (default 10,000)
#   LAKEWEED_BENCH_FASHION_ROWS / LAKEWEED_BENCH_DEMO_ROWS  sizes of the vector benchmark (60,000 / 1,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
export LAKEWEED_BENCH=1
export WEED_BINARY=${WEED_BINARY:-$PWD/bin/weed}
mkdir -p bench/results
BENCH=${BENCH:-all}
if [ "$BENCH" = all ] || [ "$BENCH" = plan ]; then
  go test -count=1 -timeout 180m -run TestPlanBenchmark -v ./bench/planbench/ 2>&1 | tee bench/results/plan.log | grep -E "plan_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = deletes ]; then
  go test -count=1 -timeout 60m -run TestDeleteBenchmark -v ./bench/deletebench/ 2>&1 | tee bench/results/deletes.log | grep -E "delete_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = sideindex ]; then
  go test -count=1 -timeout 60m -run TestSideIndexBenchmark -v ./bench/sideindexbench/ 2>&1 | tee bench/results/sideindex.log | grep -E "sideindex_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = sideindex-build ]; then
  go test -count=1 -timeout 60m -run TestSideIndexBuildScalingBenchmark -v ./bench/sideindexbench/ 2>&1 | tee bench/results/sideindex_build.log | grep -E "build_scaling_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = sideindex-igo ]; then
  go test -count=1 -timeout 60m -run TestSideIndexIcebergGoWriterBenchmark -v ./bench/sideindexbench/ 2>&1 | tee bench/results/sideindex_icebergwriter.log | grep -E "icebergwriter_bench|^ok|FAIL|^---"
  (cd bench/peer && go test -count=1 -timeout 60m -run TestIcebergWriterPeerBenchmark -v . 2>&1) | tee bench/results/sideindex_icebergwriter_peer.log | grep -E "icebergwriter_peer|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = vector ]; then
  # The real embedding dataset: Debian's dataset-fashion-mnist.
  if [ ! -d /usr/share/datasets/fashion-mnist ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing dataset-fashion-mnist (apt-get)"
      apt-get install -y dataset-fashion-mnist >/dev/null || echo "apt-get install dataset-fashion-mnist failed: the Fashion-MNIST tables are skipped" >&2
    else
      echo "Fashion-MNIST is not installed and this is not root: sudo apt-get install dataset-fashion-mnist (the Fashion-MNIST tables are skipped)" >&2
    fi
  fi
  go test -count=1 -timeout 60m -run TestVectorBenchmark -v ./bench/vectorbench/ 2>&1 | tee bench/results/vector.log | grep -E "vector_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = kinds ]; then
  go test -count=1 -timeout 90m -run TestKindsBenchmark -v ./bench/kindsbench/ 2>&1 | tee bench/results/kinds.log | grep -E "kinds_bench|^ok|FAIL|^---"
  (cd bench/peer && go test -count=1 -timeout 90m -run TestKindsPeerBenchmark -v . 2>&1) | tee bench/results/kinds_peer.log | grep -E "kinds_peer|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = scan ]; then
  go test -count=1 -timeout 60m -run TestScanBenchmark -v ./bench/scanbench/ 2>&1 | tee bench/results/scan.log | grep -E "scan_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = restplan ]; then
  ./scripts/install-clients.sh
  go test -count=1 -timeout 90m -run TestRESTPlanBenchmark -v ./bench/restplanbench/ 2>&1 | tee bench/results/restplan.log | grep -E "restplan_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = aggregates ]; then
  # -tags duckdb_arrow: DuckDB fed by the connector's read as Arrow, the second engine measured
  (cd bench/peer && go test -count=1 -tags duckdb_arrow -timeout 60m -run TestAggregateBenchmark -v . 2>&1) | tee bench/results/aggregates.log | grep -E "agg_bench|^ok|FAIL|^---"
fi
if [ "$BENCH" = all ] || [ "$BENCH" = peer ]; then
  # Its own module: DuckDB (cgo) stays out of the main build.
  (cd bench/peer && go test -count=1 -timeout 180m -run 'TestPeerBenchmark|TestConnectorAgreesWithDuckDBOnRandomPredicates' -v . 2>&1) | tee bench/results/peer.log | grep -E "peer_test|duckdb_differential|^ok|FAIL|^---"
  # A full-size run's table goes into the README (reduced runs leave it).
  if [ -z "${LAKEWEED_BENCH_ROWS:-}${LAKEWEED_PEER_MODES:-}${LAKEWEED_PEER_BIG_ROWS:-}${LAKEWEED_BENCH_QUICK:-}" ]; then
    ./scripts/readme-peer-table.sh
  fi
fi
