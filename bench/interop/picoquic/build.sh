#!/usr/bin/env bash
# Builds picoquic's picoquicdemo (its HTTP/3 server, h3zero) from the
# sources aiopquic 0.6.1 vendors on PyPI, with aiopquic's own patches —
# the picoquic (1.1.53) that aiopquic users run. aiopquic itself needs
# Python >= 3.12; its C server does not, so the interop matrix runs that
# (pcm/interop_test.go, TestInteropPicoquic).
#
# Usage: bash bench/interop/picoquic/build.sh DIR
# Leaves DIR/bin/picoquicdemo; a second run with the binary present does
# nothing. Needs pip, cmake, a C compiler and OpenSSL's headers
# (libssl-dev). About 50 s of CPU.
set -euo pipefail
version=0.6.1
sha256=72579146e0f22859a5a7c197246604fef460b9e1b578a2910156dff7679efd29
dir=${1:?usage: build.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -x "$dir/bin/picoquicdemo" ] && exit 0
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN)}
src="$dir/src"
rm -rf "$src" && mkdir -p "$src"
# The compilers' output goes to a log, shown if a step fails.
log="$dir/build.log"
: >"$log"
trap 'echo "picoquic build failed; the end of $log:" >&2; tail -n 40 "$log" >&2' ERR
python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  --ignore-requires-python --dest "$src" "aiopquic==$version"
echo "$sha256  $src/aiopquic-$version.tar.gz" | sha256sum --check --quiet
tar -xzf "$src/aiopquic-$version.tar.gz" -C "$src"
top="$src/aiopquic-$version"
for p in "$top"/patches/*.patch; do
  patch --quiet --directory "$top/third_party/picoquic" -p1 <"$p" >>"$log" 2>&1
done
cmake -S "$top/third_party/picotls" -B "$src/picotls-build" -DCMAKE_BUILD_TYPE=Release \
  -DWITH_FUSION=OFF -DBUILD_TESTING=OFF >>"$log" 2>&1
cmake --build "$src/picotls-build" -j "$jobs" --target picotls-core picotls-openssl picotls-minicrypto >>"$log" 2>&1
ptls="$src/picotls-build"
cmake -S "$top/third_party/picoquic" -B "$src/picoquic-build" -DCMAKE_BUILD_TYPE=Release \
  -Dpicoquic_BUILD_TESTS=OFF -DBUILD_DEMO=ON -DBUILD_HTTP=ON -DBUILD_LOGLIB=ON \
  -DBUILD_LOGREADER=OFF -DBUILD_PQBENCH=OFF -DBUILD_PICO_SIM=OFF -DPTLS_WITH_FUSION=OFF \
  -DPTLS_INCLUDE_DIR="$top/third_party/picotls/include" \
  -DPTLS_CORE_LIBRARY="$ptls/libpicotls-core.a" -DPTLS_OPENSSL_LIBRARY="$ptls/libpicotls-openssl.a" \
  -DPTLS_MINICRYPTO_LIBRARY="$ptls/libpicotls-minicrypto.a" >>"$log" 2>&1
cmake --build "$src/picoquic-build" -j "$jobs" --target picoquicdemo >>"$log" 2>&1
mkdir -p "$dir/bin"
cp "$src/picoquic-build/picoquicdemo" "$dir/bin/picoquicdemo"
rm -rf "$src"
