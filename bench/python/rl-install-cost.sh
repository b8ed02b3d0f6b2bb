#!/usr/bin/env bash
# Install cost of the PPO library candidates for hetquic_rl (python/README.md,
# "Choosing the PPO library"), for a `gen measured` block: each candidate is
# installed alone into a fresh venv with `pip install --no-cache-dir`
# (download included), timed, and its site-packages measured with du. Needs
# PyPI; network and machine load make the seconds a measurement, not a
# constant. A candidate that fails to install is reported with pip's last
# line instead.
#   bash bench/python/rl-install-cost.sh [PYTHON]     (default python3)
set -uo pipefail
py=${1:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One candidate per line: a label, a tab, pip's arguments.
candidates=$'gymnasium numpy (baseline)\tgymnasium numpy
skrl[jax] gymnasium (chosen)\tskrl[jax] gymnasium
rejax\trejax
stable-baselines3 (torch from PyPI)\tstable-baselines3
stable-baselines3, torch from the CPU index\tstable-baselines3 torch --index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple'
echo "$("$py" --version), $(nproc) cores; pip install --no-cache-dir ARGS into a fresh venv each"
printf '%-44s %8s %18s %12s\n' "candidate" "seconds" "site-packages MB" "load after"
i=0
while IFS=$'\t' read -r label args; do
  i=$((i + 1))
  venv="$tmp/venv$i"
  "$py" -m venv "$venv"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086 # args is a list of pip arguments
  if "$venv/bin/pip" install --no-cache-dir --quiet $args >"$tmp/log$i" 2>&1; then
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    mb=$(du -sm "$site" | cut -f1)
    printf '%-44s %8.0f %18s %12s\n' "$label" "$secs" "$mb" "$(cut -d' ' -f1 /proc/loadavg)"
  else
    printf '%-44s failed: %s\n' "$label" "$(grep -v '^\s*$' "$tmp/log$i" | tail -1 | cut -c1-100)"
  fi
  rm -rf "$venv"
done <<<"$candidates"
