#!/usr/bin/env bash
# Builds quiche 0.30.0's example HTTP/3 server (examples/http3-server.rs in
# the crate as published on crates.io) for bench/interop/matrix.sh --rust.
# The example listens on 127.0.0.1:4433, reads examples/cert.crt and
# examples/cert.key and serves files under examples/root, all relative to
# its working directory, and sends disable_active_migration.
#
# Usage: bash bench/interop/quiche/build.sh DIR
# Leaves DIR/bin/quiche-http3-server; a second run with the binary present
# does nothing. Needs cargo, cmake and libclang with its headers (BoringSSL
# through the boring crate, whose bindgen runs clang: Debian's libclang1-14
# and libclang-common-14-dev); about 20 minutes on one shared core.
set -euo pipefail
version=0.30.0
dir=${1:?usage: build.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -x "$dir/bin/quiche-http3-server" ] && exit 0
# Fetch the published crate through a throw-away manifest, then find its
# source where cargo unpacked it.
fetch="$dir/fetch"
mkdir -p "$fetch/src"
printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nquiche = "=%s"\n' "$version" >"$fetch/Cargo.toml"
: >"$fetch/src/lib.rs"
cargo fetch --quiet --manifest-path "$fetch/Cargo.toml"
src=$(cargo metadata --quiet --format-version 1 --manifest-path "$fetch/Cargo.toml" |
  python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "quiche"))')
rm -rf "$dir/quiche" && cp -r "$(dirname "$src")" "$dir/quiche"
nice -n 10 cargo build --quiet --release --locked -j "${JOBS:-1}" --example http3-server \
  --manifest-path "$dir/quiche/Cargo.toml" --target-dir "$dir/target"
mkdir -p "$dir/bin"
cp "$dir/target/release/examples/http3-server" "$dir/bin/quiche-http3-server"
# Only the binary stays: BoringSSL's sources include Go files that the
# repository's `gofmt -l .` would read.
rm -rf "$dir/target" "$dir/quiche" "$dir/fetch"
