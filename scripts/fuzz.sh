#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (FUZZTIME,
# default 4s): request decoders and payload readers met with bytes nobody
# vouches for. Their seed corpora (and testdata/fuzz regressions) also run
# as ordinary tests in `go test`. FUZZ_PACKAGES (names under
# weed/pushdown, space-separated) keeps only those packages' targets:
# `make test` fuzzes the request decoders briefly; `make fuzz FUZZTIME=1m`
# fuzzes everything longer.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-4s}
status=0
targets=$(grep -rl --include='*_test.go' '^func Fuzz' weed | sort | while read -r f; do
  pkg=./$(dirname "$f")
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$pkg |"
done)
if [ -n "${FUZZ_PACKAGES:-}" ]; then
  keep=$(for p in $FUZZ_PACKAGES; do echo "./weed/pushdown/$p "; done)
  all=$targets
  targets=$(echo "$all" | grep -F "$keep" || true)
  # FUZZ_ROTATE=1: plus one of the other targets (payload readers, whose
  # fuzzing starts slowly), chosen by the commit: each commit fuzzes
  # another, so `make test` reaches every one over a few commits.
  if [ "${FUZZ_ROTATE:-}" = 1 ]; then
    others=$(echo "$all" | grep -vF "$keep" | grep . || true)
    m=$(echo "$others" | grep -c . || true)
    if [ "$m" -gt 0 ]; then
      h=$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0)
      i=$(( 16#${h:-0} % m + 1 ))
      targets=$(printf '%s\n%s\n' "$targets" "$(echo "$others" | sed -n "${i}p")")
    fi
  fi
fi
n=$(echo "$targets" | grep -c . || true)
echo "fuzzing $n targets for $FUZZTIME each"
while read -r pkg name; do
  [ -n "$pkg" ] || continue
  out=$($GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1) && ok=1 || ok=0
  # Go's fuzzing engine can miss its own deadline on a loaded machine
  # ("context deadline exceeded", no failing input written): that is not
  # a finding; run the target once more and say so. A real failure
  # writes its input under testdata/fuzz and fails as before.
  if [ $ok = 0 ] && echo "$out" | grep -q 'context deadline exceeded' && ! echo "$out" | grep -q 'Failing input written'; then
    echo "retry $pkg $name: the fuzzing engine missed its deadline without a failing input"
    out=$($GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1) && ok=1 || ok=0
  fi
  if [ $ok = 0 ]; then
    echo "FAIL $pkg $name"
    echo "$out" | grep -v 'elapsed:' | tail -40
    status=1
  else
    echo "ok   $pkg $name"
  fi
done <<< "$targets"
exit $status
