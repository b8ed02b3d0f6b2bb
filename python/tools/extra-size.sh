#!/usr/bin/env bash
# Prints a Markdown table of what installing the hetquic package with each
# given extra costs: seconds (download included: --no-cache-dir) and the size
# of the fresh venv's site-packages. Needs PyPI. Run from the repository root:
#   bash python/tools/extra-size.sh '' sweep dask
set -euo pipefail
echo "| \`pip install 'python[EXTRA]'\` into a fresh venv | seconds | site-packages MB | packages |"
echo "|---|---|---|---|"
for extra in "$@"; do
  venv=$(mktemp -d)
  trap 'rm -rf "$venv"' EXIT
  python3 -m venv "$venv"
  start=$(date +%s.%N)
  "$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "./python${extra:+[$extra]}" >&2
  end=$(date +%s.%N)
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mb=$(du -sm "$site" | cut -f1)
  n=$("$venv/bin/pip" list --disable-pip-version-check --format=freeze | wc -l)
  printf '| %s | %.0f | %s | %s |\n' "${extra:-(none: numpy only)}" "$(echo "$end - $start" | bc)" "$mb" "$n"
  rm -rf "$venv"
done
