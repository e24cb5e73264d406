#!/usr/bin/env bash
# Times two commands side by side, one after the other in each round, so
# that a machine whose speed drifts affects both alike; prints each one's
# median and fastest wall time.
#   bash testdata/bench/alternate.sh ROUNDS CMD_A... -- CMD_B...
set -euo pipefail
rounds=$1
shift
a=() b=() ta=() tb=() side=a
for x in "$@"; do
  if [ "$x" = "--" ]; then side=b; continue; fi
  if [ $side = a ]; then a+=("$x"); else b+=("$x"); fi
done
[ ${#a[@]} -gt 0 ] && [ ${#b[@]} -gt 0 ] || { echo "usage: alternate.sh ROUNDS CMD_A... -- CMD_B..." >&2; exit 2; }
took() { # microseconds one run of "$@" took
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}
for _ in $(seq 1 "$rounds"); do
  ta+=("$(took "${a[@]}")")
  tb+=("$(took "${b[@]}")")
done
summary() {
  printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {printf "median %.1f ms, fastest %.1f ms (%d runs)\n", v[int((NR+1)/2)]/1000, v[1]/1000, NR}'
}
echo "A: $(summary "${ta[@]}")"
echo "B: $(summary "${tb[@]}")"
