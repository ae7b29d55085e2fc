#!/usr/bin/env bash
# `make bench`: benchmarks against real clusters (not timed tests).
# Results: bench/results/*.json and *.md. LAKEWEED_BENCH_QUICK=1 skips the
# 10,000-file table.
set -euo pipefail
cd "$(dirname "$0")/.."
export LAKEWEED_BENCH=1
export WEED_BINARY=${WEED_BINARY:-$PWD/bin/weed}
go test -count=1 -timeout 180m -run TestPlanBenchmark -v ./bench/planbench/ 2>&1 | tee bench/results/plan.log | grep -E "planbench|plan_bench|ok|FAIL|---"
