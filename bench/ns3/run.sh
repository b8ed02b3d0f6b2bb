#!/usr/bin/env bash
# Issue 6's speed comparison, side by side: ns-3 (Debian's 3.37) and hetquic's
# simulator, each simulating a 10 MB NewReno transfer over one 10 Mbit/s,
# 20 ms link with a 100-packet drop-tail queue, and over two such links.
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
g++ -O2 -std=c++17 bench/ns3/transfer.cc $flags -o "$tmp/transfer"

# Wall time per run, in ms, as the median of $runs runs of "$@".
median_ms() {
  local t=()
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N)
    t+=($(( (e - s) / 1000000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
start=$(median_ms "$tmp/transfer" --links=1 --bytes=1448)
one=$(median_ms "$tmp/transfer" --links=1)
two=$(median_ms "$tmp/transfer" --links=2)
echo "ns-3 3.37: process start + one segment ${start} ms; 10 MB one link ${one} ms; two links ${two} ms (median of $runs, wall)"
go test ./sim/ -run XXX -bench 'Transfer10MB' -benchtime "${runs}x" | grep Benchmark
