#!/usr/bin/env bash
# ns-3 (Debian's 3.37) and hetquic's simulator side by side on the same
# transfers: 10 MB NewReno over one 10 Mbit/s, 20 ms link with a 100-packet
# drop-tail queue, and over two such links (bench/ns3/transfer.cc against
# bench/ns3/transfer-*.yaml and sim's BenchmarkTransfer10MB*, which build the
# same network). Both sides print the simulated completion time, so the table
# shows that they simulated the same transfer.
#
# The loop against the loop: ns-3's Simulator::Run, timed inside the
# process (wall, and CPU by clock()), against one iteration of the benchmark
# for the same transfer (wall ns/op and the process CPU time it spent,
# cpu-ns/op). The process against the process: the whole command, from exec
# to exit: `hetquic sim run … --md`, which runs the experiment file and
# prints its result table, as ns-3 prints its line; neither writes files.
# Wall and CPU time both: on a shared machine CPU time is the steadier. The
# sides alternate run by run, so they see the same load. Prints a markdown
# block for a `gen measured` marker in sim/README.md. A benchmark, not a test.
# The last rows time one 1448-byte segment: the process's fixed cost.
# Needs root for apt-get (it installs ns-3 once).
#   bash bench/ns3/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash bench/ns3/compile.sh bench/ns3/transfer.cc "$tmp/ns3"
go build -o "$tmp/hetquic" ./cmd/hetquic
go test -c -o "$tmp/sim.test" ./sim

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# key=value or "key": value from a line
val() { grep -o "\"\?$1\"\?[=:] *[0-9.e+-]*" | head -1 | sed 's/.*[=:] *//'; }
# run CMD…: stdout to $tmp/out; wall and CPU (user + system) ms to $tmp/wall, $tmp/cpu
run() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >"$tmp/out"; } 2>"$tmp/time"
  awk '{print $1 * 1000}' "$tmp/time" >"$tmp/wall"
  awk '{print ($2 + $3) * 1000}' "$tmp/time" >"$tmp/cpu"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }

load=$(uptime | sed 's/.*load average: //')
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`bash bench/ns3/run.sh $runs\` (median of $runs runs each, sides alternating;"
echo "load average before: $load; $(nproc) cores; ns-3 $(pkg-config --modversion ns3-core), $(go version | cut -d' ' -f3))."
echo
echo "| transfer | side | simulated FCT (s) | events | loop wall (ms) | loop CPU (ms) | process wall (ms) | process CPU (ms) | process − loop, CPU (ms) |"
echo "|---|---|---|---|---|---|---|---|---|"
for links in 1 2; do
  spec=bench/ns3/transfer-1link.yaml bench=Transfer10MBOneLink
  [ "$links" = 2 ] && spec=bench/ns3/transfer-2links.yaml bench=Transfer10MBTwoLinks
  for k in nlw nlc npw npc hlw hlc hpw hpc; do : >"$tmp/$k"; done
  for _ in $(seq "$runs"); do
    run "$tmp/ns3" --links="$links"
    n_fct=$(val fct_s <"$tmp/out") n_ev=$(val events <"$tmp/out")
    val loop_ms <"$tmp/out" >>"$tmp/nlw"; val loop_cpu_ms <"$tmp/out" >>"$tmp/nlc"
    cat "$tmp/wall" >>"$tmp/npw"; cat "$tmp/cpu" >>"$tmp/npc"
    run "$tmp/hetquic" sim run "$spec" --seeds 1 --workers 1 --quiet --md
    # | NewReno | 1 | 9.57 ± 0.00 | 8.36 / 8.36 / 8.36 | …: the FCT p50
    h_fct=$(grep '^| NewReno' "$tmp/out" | awk -F'|' '{split($5, f, "/"); print f[2] + 0}')
    cat "$tmp/wall" >>"$tmp/hpw"; cat "$tmp/cpu" >>"$tmp/hpc"
    "$tmp/sim.test" -test.run '^$' -test.bench "^Benchmark$bench\$" -test.benchtime 1x >"$tmp/out"
    b_fct=$(grep -o '[0-9.]* sim-s/op' "$tmp/out" | cut -d' ' -f1) h_ev=$(grep -o '[0-9]* events/op' "$tmp/out" | cut -d' ' -f1)
    grep -o '[0-9]* ns/op' "$tmp/out" | awk '{print $1 / 1e6}' >>"$tmp/hlw"
    grep -o '[0-9.]* cpu-ns/op' "$tmp/out" | awk '{print $1 / 1e6}' >>"$tmp/hlc"
  done
  for k in nlw nlc npw npc hlw hlc hpw hpc; do eval "$k=\$(median <\"\$tmp/$k\")"; done
  printf '| 10 MB, %s link(s) | ns-3 | %.3f | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n' "$links" "$n_fct" "$n_ev" "$nlw" "$nlc" "$npw" "$npc" \
    "$(awk -v a="$npc" -v b="$nlc" 'BEGIN {print a - b}')"
  printf '| 10 MB, %s link(s) | hetquic | %.2f (benchmark %.3f) | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n' "$links" "$h_fct" "$b_fct" "$h_ev" \
    "$hlw" "$hlc" "$hpw" "$hpc" "$(awk -v a="$hpc" -v b="$hlc" 'BEGIN {print a - b}')"
  printf '| 10 MB, %s link(s) | hetquic ÷ ns-3 | | | **%s** | **%s** | **%s** | **%s** | |\n' "$links" \
    "$(ratio "$hlw" "$nlw")" "$(ratio "$hlc" "$nlc")" "$(ratio "$hpw" "$npw")" "$(ratio "$hpc" "$npc")"
done
# The fixed cost: one segment, so that the process is all start-up, set-up and exit.
for k in npw npc hpw hpc; do : >"$tmp/$k"; done
for _ in $(seq "$runs"); do
  run "$tmp/ns3" --links=1 --bytes=1448
  n_fct=$(val fct_s <"$tmp/out"); cat "$tmp/wall" >>"$tmp/npw"; cat "$tmp/cpu" >>"$tmp/npc"
  run "$tmp/hetquic" sim run bench/ns3/transfer-1segment.yaml --seeds 1 --workers 1 --quiet --md
  h_fct=$(grep '^| NewReno' "$tmp/out" | awk -F'|' '{split($5, f, "/"); print f[2] + 0}')
  cat "$tmp/wall" >>"$tmp/hpw"; cat "$tmp/cpu" >>"$tmp/hpc"
done
for k in npw npc hpw hpc; do eval "$k=\$(median <\"\$tmp/$k\")"; done
printf '| 1 segment (fixed cost) | ns-3 | %.3f | | | | %.1f | %.1f | |\n' "$n_fct" "$npw" "$npc"
printf '| 1 segment (fixed cost) | hetquic | %.2f | | | | %.1f | %.1f | |\n' "$h_fct" "$hpw" "$hpc"
echo
echo "Load average after: $(uptime | sed 's/.*load average: //'). Goals: loop ≤ 0.05 × ns-3, process ≤ 0.3 × ns-3."
