#!/usr/bin/env bash
# Runs the README's test command (read from README.md, as .ci/run does) and
# prints its wall time, the load around it and its slowest packages: the
# README's measured block, and the proof that no package nears the
# command's -timeout. Run from the repository root.
#   bash bench/tests/time.sh          # the command as it is
#   HOGS=2 bash bench/tests/time.sh   # beside 2 busy loops at nice 19
# The full output goes to $TMPDIR/hetquic-test.log. Exits with the
# command's status.
set -uo pipefail
cmd=$(grep -m1 '^go test -race ' README.md | sed 's/ *#.*$//')
[ -n "$cmd" ] || { echo "time.sh: README.md has no 'go test -race' line" >&2; exit 2; }
log="${TMPDIR:-/tmp}/hetquic-test.log"
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
for _ in $(seq 1 "${HOGS:-0}"); do
  nice -n 19 bash -c 'while :; do :; done' &
  hogs+=($!)
done
before=$(cut -d' ' -f1-3 /proc/loadavg)
s=$(date +%s)
eval "$cmd" >"$log" 2>&1
rc=$?
took=$(($(date +%s) - s))
after=$(cut -d' ' -f1-3 /proc/loadavg)
verdict=passed
[ "$rc" -eq 0 ] || verdict="FAILED (exit $rc)"
echo "the README's test command $verdict in $took s beside ${HOGS:-0} busy loops (load before: $before; after: $after)"
echo "slowest packages:"
awk '$1 == "ok" || $1 == "FAIL" { if ($3 ~ /s$/) { t = $3; sub(/s$/, "", t); printf "%8.1f s  %s %s\n", t, $1, $2 } }' "$log" | sort -rn | head -5
exit "$rc"
