#!/usr/bin/env bash
# Copies the peer benchmark's table (bench/results/peer.md, or the file
# given) into README.md between the peer-table markers, replacing what was
# there. `BENCH=peer ./scripts/bench.sh` runs it after a full-size run.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-bench/results/peer.md}
begin='<!-- peer-table:begin'
end='<!-- peer-table:end -->'
[ -s "$src" ] || { echo "readme-peer-table: $src is missing or empty" >&2; exit 1; }
if ! grep -q "^$begin" README.md || ! grep -q "^$end" README.md; then
  echo "readme-peer-table: README.md has no '$begin' ... '$end' markers" >&2
  exit 1
fi
awk -v src="$src" -v b="$begin" -v e="$end" '
  index($0, b) == 1 { print; while ((getline line < src) > 0) print line; skip = 1; next }
  index($0, e) == 1 { print ""; skip = 0 }
  !skip { print }
' README.md > README.md.tmp
mv README.md.tmp README.md
echo "README.md: peer table from $src"
