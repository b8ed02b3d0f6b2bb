#!/usr/bin/env bash
# The PCM-QUIC interop matrix (pcm/RESULTS.md, "Interop"): 30 requests per
# server stack, polling three loopback addresses, each body checked byte by
# byte and each response's measured carrier checked against what the
# client's sockets received (pcm/interop_test.go, interop()).
#
# The Debian/PyPI stacks (aioquic, qh3, ngtcp2's gtlsserver, and picoquic's
# picoquicdemo built from aiopquic's sdist by picoquic/build.sh) run as Go
# tests, as in CI. The stacks that need a long Rust build run only with
# --rust, built into bench/interop/.cache under nice -n 10 on one core and
# served through TestInteropCommand:
#   quinn 0.11 + h3 0.0.8: our origin, bench/interop/quinn (~4 min);
#   quiche 0.30: the crate's example HTTP/3 server, quiche/build.sh (it
#     sends disable_active_migration: both modes are run, neither may move;
#     ~20 min);
#   tquic 1.6.0: tquic_server from `cargo install tquic_tools` (~25 min).
#
# Usage: bash bench/interop/matrix.sh [--rust]
# Prints the Markdown table for pcm/RESULTS.md on stdout; `hetquic docs
# --measured --match interop pcm/RESULTS.md` runs it and stamps the block
# with the date and load.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rust=false
[ "${1:-}" = "--rust" ] && rust=true
cache=bench/interop/.cache
mkdir -p "$cache"

bash bench/interop/picoquic/build.sh "$cache/picoquic"
rows=$(go test -count=1 -run '^TestInterop(Aioquic|Qh3|Ngtcp2|Picoquic)$' -v ./pcm | sed -n 's/.*MATRIX //p')

dir=$(mktemp -d)
pid=
trap 'rm -rf "$dir"; [ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT
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

# measure STACK ADDR MIGRATION LOGPATTERN: the rows of the server running
# at ADDR (MIGRATION: "" or "disabled", TestInteropCommand). A run that
# fails names the failed request and the server log's first line matching
# LOGPATTERN.
measure() {
  local stack=$1 addr=$2 migration=$3 pattern=$4 out got failed server
  sleep 1
  if out=$(HETQUIC_INTEROP_ADDR=$addr HETQUIC_INTEROP_CA="$dir/cert.pem" HETQUIC_INTEROP_STACK=$stack \
      HETQUIC_INTEROP_MIGRATION=$migration go test -count=1 -run '^TestInteropCommand$' -v ./pcm 2>&1); then
    printf '%s\n' "$out" | sed -n 's/.*MATRIX //p'
  else
    got=$(printf '%s\n' "$out" | sed -n 's/.*MATRIX //p')
    if [ -n "$got" ]; then
      printf '%s\n' "$got" | sed 's/ |$/; the test failed (see its output) |/'
    else
      failed=$(printf '%s\n' "$out" | grep -o 'request [0-9]*: .*' | tail -1 | cut -c1-100)
      server=$(grep -m1 -o "$pattern" "$dir/server.log" || true)
      echo "| $stack | 30 | — | — | — | — | failed at ${failed:-the start}; server log: ${server:-nothing} |"
    fi
  fi
}

# stop ends the server started last.
stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}

rust_rows=
if $rust; then
  nice -n 10 cargo build --quiet --release --locked -j 1 --manifest-path bench/interop/quinn/Cargo.toml \
    --target-dir "$cache/quinn-target" >&2
  "$cache/quinn-target/release/quinn-h3-origin" "127.0.0.1:$port" "$dir/cert.pem" "$dir/key.pem" >"$dir/server.log" 2>&1 &
  pid=$!
  rust_rows+=$(measure "quinn 0.11.12 + h3 0.0.8" "127.0.0.1:$port" "" 'connection ended: .*')$'\n'
  stop

  bash bench/interop/quiche/build.sh "$cache/quiche" >&2
  mkdir -p "$dir/quiche/examples"
  cp "$dir/cert.pem" "$dir/quiche/examples/cert.crt"
  cp "$dir/key.pem" "$dir/quiche/examples/cert.key"
  cp -r "$dir/htdocs" "$dir/quiche/examples/root"
  # The example's address is fixed: 127.0.0.1:4433.
  (cd "$dir/quiche" && exec "$root/$cache/quiche/bin/quiche-http3-server") >"$dir/server.log" 2>&1 &
  pid=$!
  rust_rows+=$(measure "quiche 0.30" 127.0.0.1:4433 disabled '.*rror.*')$'\n'
  stop

  if [ ! -x "$cache/bin/tquic_server" ]; then
    nice -n 10 cargo install --quiet --locked -j 1 --root "$cache" tquic_tools --version 1.6.0 >&2
  fi
  "$cache/bin/tquic_server" -l "127.0.0.1:$port" -c "$dir/cert.pem" -k "$dir/key.pem" -r "$dir/htdocs" >"$dir/server.log" 2>&1 &
  pid=$!
  rust_rows+=$(measure "tquic 1.6.0" "127.0.0.1:$port" "" 'recv error and close [A-Za-z]*')
  stop
else
  rust_rows="| quinn 0.11.12 + h3 0.0.8 | 0 | — | — | — | — | not measured: \`bash bench/interop/matrix.sh --rust\` not run this time |
| quiche 0.30 | 0 | — | — | — | — | not measured: \`bash bench/interop/matrix.sh --rust\` not run this time |
| tquic 1.6.0 | 0 | — | — | — | — | not measured: \`bash bench/interop/matrix.sh --rust\` not run this time |"
fi

echo "| server | requests | migrations | intact | carried on the path sent on | measured carrier = socket's | pinned |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "$rows"
printf '%s\n' "$rust_rows"
