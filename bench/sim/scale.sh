#!/usr/bin/env bash
# The simulator's scale benchmarks (issue 14 point 5) as a markdown block for
# a `gen measured` marker in sim/README.md: cost per event over 1–64 paths,
# 1000 concurrent flows on Abilene, and the memory of a transfer against its
# size (live heap at 8 vs 128 MiB, and the peak RSS of a 10 GB transfer).
# CPU time per event is the steadier figure on a shared machine; wall time is
# printed beside it. A benchmark, not a test.
#   bash bench/sim/scale.sh [BENCHTIME]     (default 3x)
set -euo pipefail
cd "$(dirname "$0")/../.."
bt=${1:-3x}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(uptime | sed 's/.*load average: //')
go test ./sim ./sim/runner -run '^$' -bench 'Paths|Abilene1000Flows' -benchtime "$bt" >"$tmp/bench.txt"
go test ./sim -run 'TestMemoryFlatInTransferSize' -v -count 1 >"$tmp/flat.txt"
HETQUIC_SIM_10GB=1 go test ./sim -run 'TestTransfer10GB' -v -count 1 -timeout 20m >"$tmp/10gb.txt"

echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`bash bench/sim/scale.sh $bt\` ($(go version | cut -d' ' -f3), $(nproc) cores;"
echo "load average before: $load; after: $(uptime | sed 's/.*load average: //'))."
echo
# metric value pairs after the iteration count: "N ns/op X cpu-ns/event Y events/op Z ns/event"
field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($(i + 1) == k) {print $i; exit}}'; }
echo "| benchmark | events per run | CPU ns/event | wall ns/event |"
echo "|---|---|---|---|"
grep '^Benchmark' "$tmp/bench.txt" | while read -r line; do
  name=$(awk '{print $1}' <<<"$line" | sed 's/-[0-9]*$//; s/^Benchmark//')
  printf '| %s | %s | %s | %s |\n' "$name" "$(field events/op <<<"$line")" "$(field cpu-ns/event <<<"$line")" "$(field ns/event <<<"$line")"
done
echo
grep -o 'live heap above.*' "$tmp/flat.txt" | sed 's/^live/TestMemoryFlatInTransferSize: live/; s/$/./'
echo
grep -o '10 GB in .*' "$tmp/10gb.txt" | sed 's/^/TestTransfer10GB (HETQUIC_SIM_10GB=1): /; s/$/ (limit 100 MB)./'
