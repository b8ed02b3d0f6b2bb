#!/usr/bin/env bash
# The agent's scheduler comparison for agent/DESIGN.md's `gen measured`
# block: BenchmarkSchedulerComparison (agent/sched_compare_test.go) runs every
# policy, with and without striping, on two loopback paths shaped by a test
# wrapper on the client's sockets (rate, delay, 64-packet tail-drop queue),
# and this prints its metrics as one table per scenario, fastest first:
# makespan (all requests done), efficiency (bytes / total rate / makespan),
# mean completion of the large and of the small requests. Timings of real
# sockets on a shared machine: a measurement, not a test.
#   bash bench/agent/sched.sh [BENCHTIME]     (default 2x: mean of 2 runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
bt=${1:-2x}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
go test ./agent -run '^$' -bench SchedulerComparison -benchtime "$bt" -count 1 >"$tmp"
echo "go test ./agent -run '^\$' -bench SchedulerComparison -benchtime $bt; mean of the runs per row"
# "BenchmarkSchedulerComparison/SCENARIO/POLICY[/nostripe]-P  N  T ns/op  V UNIT ..."
awk '
  /^BenchmarkSchedulerComparison\// {
    name = $1; sub(/^BenchmarkSchedulerComparison\//, "", name); sub(/-[0-9]+$/, "", name)
    sc = name; sub(/\/.*/, "", sc)
    pol = name; sub(/^[^\/]*\//, "", pol); sub(/\/nostripe$/, ", no striping", pol)
    for (i = 4; i < NF; i++) v[$(i + 1)] = $i
    printf "%s\t%s\t%d\t%.2f\t%d\t%d\n", sc, pol, v["makespan_ms"], v["eff"], v["big_mean_ms"], v["small_mean_ms"]
  }' "$tmp" | sort -t$'\t' -k1,1 -k3,3n | awk -F'\t' '
  $1 != last {
    if (last != "") print ""
    if ($1 == "equal-paths") print "Scenario A (equal-paths): 4 MB + 1 MB on two 20 Mbit/s, 10 ms paths (ideal 1.0 s)"
    else if ($1 == "unequal-paths") print "Scenario B (unequal-paths): 3 MB + 1 MB and twelve 30 kB loads every 80 ms on 32 Mbit/s 5 ms + 8 Mbit/s 40 ms"
    else print "Scenario " $1
    printf "%-24s %12s %10s %12s %14s\n", "policy", "makespan ms", "efficiency", "mean big ms", "mean small ms"
    last = $1
  }
  { printf "%-24s %12d %10.2f %12d %14s\n", $2, $3, $4, $5, ($6 > 0 ? $6 : "-") }'
