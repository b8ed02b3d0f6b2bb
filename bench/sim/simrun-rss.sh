#!/usr/bin/env bash
# Peak RSS of `hetquic sim run` on a 10 GB single-path bulk transfer (issue
# 24: ≤ 100 MB): the command as a user runs it, writing its files, so the
# per-chunk delays (sketched past 2^20 chunks, sim/runner/delays.go), the
# summary, the figures and the CSVs all count. Prints a markdown line for
# sim/README.md's `gen measured` block. A benchmark, not a test (~35 s).
#   bash bench/sim/simrun-rss.sh [SIZE_MB]     (default 10000)
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(uptime | sed 's/.*load average: //')
go build -o "$tmp/hetquic" ./cmd/hetquic
printf 'name: one\npaths:\n  - name: a\n    up: {delay_ms: 10, rate_mbps: 1000}\n    down: {delay_ms: 10, rate_mbps: 1000}\n' >"$tmp/one.yaml"
printf 'name: rss\nscenario: one.yaml\nduration_s: 100000\napp: {kind: bulk, size_mb: %s}\nvariants: [{label: NewReno, cc: newreno}]\n' "$size" >"$tmp/rss.yaml"
/usr/bin/time -v "$tmp/hetquic" sim run "$tmp/rss.yaml" --out "$tmp/out" --quiet >"$tmp/stdout" 2>"$tmp/time"
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time")
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tmp/time")
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') by \`bash bench/sim/simrun-rss.sh $size\` ($(go version | cut -d' ' -f3), $(nproc) cores;"
echo "load average before: $load; after: $(uptime | sed 's/.*load average: //'))."
echo
echo "\`hetquic sim run\` of a $size MB single-path transfer (1 Gbit/s, 20 ms RTT, writing its files): peak RSS $((rss / 1024)) MiB (\`/usr/bin/time -v\`, limit 100 MB), wall $wall."
