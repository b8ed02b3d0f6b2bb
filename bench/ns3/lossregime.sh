#!/usr/bin/env bash
# Issue 14's loss-regime reference: ns-3 3.37 (Debian's libns3-dev) runs
# bench/ns3/lossregime.cc over the grid {TcpNewReno, TcpLinuxReno} ×
# DelAckCount {1, 2} × loss × seeds and writes the completion times to
# sim/studies/ns3ref/lossregime.csv, which `hetquic sim lossregime --md` reads
# (embedded) beside the simulator's own runs. Deterministic: ns-3 seeds by
# RngRun. Needs root for apt-get (it installs ns-3 once).
#   bash bench/ns3/lossregime.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash bench/ns3/compile.sh bench/ns3/lossregime.cc "$tmp/lossregime"
out=sim/studies/ns3ref/lossregime.csv
mkdir -p "$(dirname "$out")"
{
  echo "# ns-3 3.37, bench/ns3/lossregime.cc: 10 MB, 10 Mbit/s, 20 ms, 100-packet queue, Bernoulli loss on data"
  echo "tcp,delack,loss,seed,fct_s"
  for tcp in TcpNewReno TcpLinuxReno; do
    for delack in 1 2; do
      for loss in 0 0.001 0.005 0.01 0.02; do
        for seed in 1 2 3 4 5; do
          fct=$("$tmp/lossregime" --tcp=$tcp --delack=$delack --loss=$loss --run=$seed)
          echo "$tcp,$delack,$loss,$seed,$fct"
        done
      done
    done
  done
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
