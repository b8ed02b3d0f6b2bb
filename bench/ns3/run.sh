#!/usr/bin/env bash
# ns-3 (Debian's 3.37) and hetquic's simulator side by side on the same
# transfers: 10 MB NewReno over one 10 Mbit/s, 20 ms link with a 100-packet
# drop-tail queue, and over two such links (bench/ns3/transfer.cc and
# bench/ns3/transfer-*.yaml). For each side and each transfer it reports the
# simulated completion time (so that it shows both simulated the same
# transfer), the loop's wall time measured inside the process (ns-3:
# Simulator::Run; hetquic: the run's wall_per_run_s, topology set-up
# included), the whole process's wall time, and process − loop (the fixed
# cost). The two sides alternate run by run, so both see the same load.
# Prints a markdown block for a `gen measured` marker in sim/README.md.
# A benchmark, not a test. Needs root for apt-get (it installs ns-3 once).
#   bash bench/ns3/run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-10}
if ! pkg-config --exists ns3-core 2>/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libns3-dev libgsl-dev pkg-config g++ >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ns-3's pkg-config files carry a stray "-I/usr;" (see issue 6).
flags=$(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point \
  ns3-applications ns3-traffic-control | sed 's#-I/usr;##g')
g++ -O2 -std=c++17 bench/ns3/transfer.cc $flags -o "$tmp/ns3"
go build -o "$tmp/hetquic" ./cmd/hetquic

now_ns() { date +%s%N; }
# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

load=$(uptime | sed 's/.*load average: //')
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`bash bench/ns3/run.sh $runs\` (median of $runs runs each, sides alternating;"
echo "load average before: $load; $(nproc) cores; ns-3 $(pkg-config --modversion ns3-core), $(go version | cut -d' ' -f3))."
echo
echo "| transfer | side | simulated FCT (s) | events | loop (ms) | process (ms) | process − loop (ms) | loop ÷ ns-3 | process ÷ ns-3 |"
echo "|---|---|---|---|---|---|---|---|---|"
for links in 1 2; do
  spec=bench/ns3/transfer-${links}link.yaml
  [ "$links" = 2 ] && spec=bench/ns3/transfer-2links.yaml
  : >"$tmp/n_loop"; : >"$tmp/n_proc"; : >"$tmp/n_fix"; : >"$tmp/h_loop"; : >"$tmp/h_proc"; : >"$tmp/h_fix"
  for _ in $(seq "$runs"); do
    s=$(now_ns); out=$("$tmp/ns3" --links="$links"); e=$(now_ns)
    # ns-3 links=1 received=10000000 bytes fct_s=8.430974 events=34569 loop_ms=133.85
    n_fct=$(sed 's/.*fct_s=\([0-9.]*\).*/\1/' <<<"$out"); n_ev=$(sed 's/.*events=\([0-9]*\).*/\1/' <<<"$out")
    loop=$(sed 's/.*loop_ms=\([0-9.]*\).*/\1/' <<<"$out"); proc=$(awk -v a="$s" -v b="$e" 'BEGIN {print (b - a) / 1e6}')
    echo "$loop" >>"$tmp/n_loop"; echo "$proc" >>"$tmp/n_proc"; awk -v p="$proc" -v l="$loop" 'BEGIN {print p - l}' >>"$tmp/n_fix"
    s=$(now_ns); js=$("$tmp/hetquic" sim run "$spec" --seeds 1 --workers 1 --quiet --json --figures=false --out "$tmp/out"); e=$(now_ns)
    h_fct=$(grep -o '"fct_p50_s": [0-9.]*' <<<"$js" | cut -d' ' -f2); h_ev=$(grep -o '"events_per_run": [0-9.]*' <<<"$js" | cut -d' ' -f2)
    loop=$(grep -o '"wall_per_run_s": [0-9.e-]*' <<<"$js" | awk '{print $2 * 1000}'); proc=$(awk -v a="$s" -v b="$e" 'BEGIN {print (b - a) / 1e6}')
    echo "$loop" >>"$tmp/h_loop"; echo "$proc" >>"$tmp/h_proc"; awk -v p="$proc" -v l="$loop" 'BEGIN {print p - l}' >>"$tmp/h_fix"
  done
  nl=$(median <"$tmp/n_loop"); np=$(median <"$tmp/n_proc"); nf=$(median <"$tmp/n_fix")
  hl=$(median <"$tmp/h_loop"); hp=$(median <"$tmp/h_proc"); hf=$(median <"$tmp/h_fix")
  what="10 MB, $links link"; [ "$links" = 2 ] && what="10 MB, 2 links"
  printf '| %s | ns-3 | %.3f | %d | %.1f | %.1f | %.1f | 1 | 1 |\n' "$what" "$n_fct" "$n_ev" "$nl" "$np" "$nf"
  printf '| %s | hetquic | %.3f | %d | %.1f | %.1f | %.1f | %.3f | %.3f |\n' "$what" "$h_fct" "$h_ev" "$hl" "$hp" "$hf" \
    "$(awk -v a="$hl" -v b="$nl" 'BEGIN {print a / b}')" "$(awk -v a="$hp" -v b="$np" 'BEGIN {print a / b}')"
done
echo
echo "Load average after: $(uptime | sed 's/.*load average: //')."
