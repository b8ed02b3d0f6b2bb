#!/usr/bin/env bash
# Stream migration timings for agent/DESIGN.md's `gen measured` block: runs
# TestMigrateOnStall (one stream, and a striped response) and
# TestMigrateTunnel (a CONNECT tunnel) RUNS times on loopback and prints what
# each run logged: when the stall was decided and the stream resumed after
# the path's last byte (a tunnel's stall is decided by the per-path watcher), the longest gap the app saw, and the tunnel's resume
# handshake. Timings on a shared machine: a measurement, not a test (the
# tests bound them loosely).
#   bash bench/agent/migrate.sh [RUNS]     (default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
go test ./agent -run 'TestMigrateOnStall|TestMigrateTunnel' -count "$runs" -v >"$tmp"
echo "go test ./agent -run 'TestMigrateOnStall|TestMigrateTunnel' -count $runs -v; default StallTimeout 0.8 s"
printf '%-30s %3s %14s %14s %17s %16s\n' "case" "run" "stall decided" "stream resumed" "resume handshake" "longest app gap"
awk '
  function row(c, d, r, h, g) {
    n[c]++
    if (r == "0s") r = "-" # striped pieces are new requests, not a resume
    printf "%-30s %3d %14s %14s %17s %16s\n", c, n[c], d, r, h, g
  }
  /^=== (RUN|CONT)/ { test = $3 }
  /stall detected .* after the last byte/ {
    match($0, /stall detected [^ ]+/); d = substr($0, RSTART + 15, RLENGTH - 15)
    match($0, /response resumed [^ ]+/); r = substr($0, RSTART + 17, RLENGTH - 17)
    match($0, /longest gap seen by the app [^ ]+/); g = substr($0, RSTART + 28, RLENGTH - 28)
    row((test ~ /stripe=true/) ? "striped response (6 MB)" : "one stream (6 MB)", d, r, "-", g)
  }
  /tunnel resumed; resume handshake/ {
    match($0, /resume handshake [^;]+/); h = substr($0, RSTART + 17, RLENGTH - 17)
    match($0, /after the cut [^ ]+/); g = substr($0, RSTART + 14, RLENGTH - 14)
    row("CONNECT tunnel (3 MiB echo)", "path watcher", "-", h, g)
  }' "$tmp"
