#!/usr/bin/env bash
# Compiles one of bench/ns3/*.cc against Debian's ns-3 3.37, installing
# libns3-dev first when it is missing (needs root for apt-get). Shared by
# run.sh and lossregime.sh.
#   bash bench/ns3/compile.sh SOURCE.cc OUTPUT
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: bash bench/ns3/compile.sh SOURCE.cc OUTPUT" >&2
  exit 2
fi
if ! pkg-config --exists ns3-core 2>/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libns3-dev libgsl-dev pkg-config g++ >/dev/null
fi
# ns-3's pkg-config files carry a stray "-I/usr;" (see issue 6).
flags=$(pkg-config --cflags --libs ns3-core ns3-network ns3-internet ns3-point-to-point \
  ns3-applications ns3-traffic-control | sed 's#-I/usr;##g')
g++ -O2 -std=c++17 "$1" $flags -o "$2"
