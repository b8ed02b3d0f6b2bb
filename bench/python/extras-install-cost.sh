#!/usr/bin/env bash
# Prints a Markdown table of what installing the hetquic package with each
# given extra costs: seconds (download included: --no-cache-dir) and the size
# of a fresh venv's site-packages. Needs PyPI. Run from the repository root:
#   bash bench/python/extras-install-cost.sh '' sweep dask
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pip builds in the source tree (python/build): build from a copy instead.
cp -r python/pyproject.toml python/README.md python/src "$tmp/"
echo "| \`pip install 'python[EXTRA]'\` into a fresh venv | seconds | site-packages MB | packages |"
echo "|---|---|---|---|"
for extra in "$@"; do
  venv="$tmp/venv"
  python3 -m venv "$venv"
  start=$(date +%s.%N)
  "$venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check "$tmp${extra:+[$extra]}" >&2
  end=$(date +%s.%N)
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mb=$(du -sm "$site" | cut -f1)
  n=$("$venv/bin/pip" list --disable-pip-version-check --format=freeze | wc -l)
  printf '| %s | %.0f | %s | %s |\n' "${extra:-(none: numpy only)}" "$(echo "$end - $start" | bc)" "$mb" "$n"
  rm -rf "$venv" "$tmp/build"
done
