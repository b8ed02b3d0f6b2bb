#!/usr/bin/env bash
# Issue 22's upload sizes through ct-client on loopback: a 30 MiB upload
# over a 20 Mbit/s uplink (ct-server's receiving socket shaped, 10 ms,
# 64-packet queue) and a 64 MiB streaming echo, each checked by length and
# SHA-256 at the far end (BenchmarkUpload). A measurement on a shared
# machine, not a test; the regular tests (TestUploadStreams 8 MiB,
# TestEchoStreams 16 MiB) run in CI.
#   bash bench/agent/upload.sh [COUNT]     (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
count=${1:-1}
echo "go test ./agent -run '^\$' -bench '^BenchmarkUpload\$' -benchtime 1x -count $count"
go test ./agent -run '^$' -bench '^BenchmarkUpload$' -benchtime 1x -count "$count" 2>/dev/null |
  awk '/^BenchmarkUpload/ { printf "%-40s %10.2f s %8.1f Mbit/s\n", $1, $3 / 1e9, $5 * 8 }'
