#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (FUZZTIME,
# default 4s): request decoders and payload readers met with bytes nobody
# vouches for. Their seed corpora (and testdata/fuzz regressions) also run
# as ordinary tests in `go test`. Used by `make test`; `make fuzz
# FUZZTIME=1m` fuzzes longer.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-4s}
status=0
targets=$(grep -rl --include='*_test.go' '^func Fuzz' weed | sort | while read -r f; do
  pkg=./$(dirname "$f")
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$pkg |"
done)
n=$(echo "$targets" | grep -c . || true)
echo "fuzzing $n targets for $FUZZTIME each"
while read -r pkg name; do
  [ -n "$pkg" ] || continue
  if ! out=$($GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1); then
    echo "FAIL $pkg $name"
    echo "$out" | grep -v 'elapsed:' | tail -40
    status=1
  else
    echo "ok   $pkg $name"
  fi
done <<< "$targets"
exit $status
