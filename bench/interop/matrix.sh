#!/usr/bin/env bash
# The PCM-QUIC interop matrix (pcm/README.md, "Interop"): 30 requests per
# server stack, polling three loopback addresses, each body checked byte by
# byte and each response's measured carrier checked against what the
# client's sockets received (pcm/interop_test.go, interop()).
#
# The Debian/PyPI stacks (aioquic, qh3, ngtcp2's gtlsserver) run as Go
# tests, as in CI. The stacks that need a long Rust build run only with
# --rust: tquic's tquic_server (cargo install tquic_tools) is built into
# bench/interop/.cache under nice -n 10 and served through
# TestInteropCommand. quinn + h3 and quiche need a server of our own or a
# build of quiche's examples: not written yet, and their rows say so.
#
# Usage: bash bench/interop/matrix.sh [--rust]
# Prints the Markdown table for pcm/README.md on stdout; `hetquic docs
# --measured --match interop pcm/README.md` runs it and stamps the block
# with the date and load.
set -euo pipefail
cd "$(dirname "$0")/../.."
rust=false
[ "${1:-}" = "--rust" ] && rust=true
cache=bench/interop/.cache

rows=$(go test -count=1 -run '^TestInterop(Aioquic|Qh3|Ngtcp2)$' -v ./pcm | sed -n 's/.*MATRIX //p')

tquic_row="| tquic 1.6.0 | 0 | — | — | — | — | not measured: \`bash bench/interop/matrix.sh --rust\` not run this time |"
if $rust; then
  mkdir -p "$cache"
  if [ ! -x "$cache/bin/tquic_server" ]; then
    nice -n 10 cargo install --quiet --locked --root "$cache" tquic_tools --version 1.6.0 >&2
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
  mkdir -p "$dir/htdocs/bytes"
  python3 - "$dir/htdocs/bytes" <<'PY'
import sys
pattern = bytes(i % 251 for i in range(251))
for n in range(5120, 5150):
    open(f"{sys.argv[1]}/{n}", "wb").write((pattern * (n // 251 + 1))[:n])
PY
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$cache/bin/tquic_server" -l "127.0.0.1:$port" -c "$dir/cert.pem" -k "$dir/key.pem" -r "$dir/htdocs" >"$dir/server.log" 2>&1 &
  pid=$!
  sleep 1
  if out=$(HETQUIC_INTEROP_ADDR="127.0.0.1:$port" HETQUIC_INTEROP_CA="$dir/cert.pem" HETQUIC_INTEROP_STACK="tquic 1.6.0" \
      go test -count=1 -run '^TestInteropCommand$' -v ./pcm 2>&1); then
    tquic_row=$(printf '%s\n' "$out" | sed -n 's/.*MATRIX //p')
  else
    failed=$(printf '%s\n' "$out" | grep -o 'request [0-9]*: .*' | tail -1 | cut -c1-100)
    server=$(grep -m1 -o 'recv error and close [A-Za-z]*' "$dir/server.log" || true)
    tquic_row="| tquic 1.6.0 | 30 | — | — | — | — | failed at $failed; server log: ${server:-nothing} |"
  fi
fi

echo "| server | requests | migrations | intact | carried on the path sent on | measured carrier = socket's | pinned |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "$rows"
echo "| quinn 0.11 + h3 0.0.8 | 0 | — | — | — | — | not measured: no server in this script yet |"
echo "| quiche 0.30 | 0 | — | — | — | — | not measured: no server in this script yet |"
echo "$tquic_row"
