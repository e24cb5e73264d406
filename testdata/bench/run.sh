#!/usr/bin/env bash
# Measures `harness run` overhead, offline, from cassettes recorded against the
# scripted loopback provider (examples/demo/fakeprovider):
#   (1) time to first model request with a 2,000-skill root and one preloaded
#       skill: the wall time of a one-turn replay (snapshot, preload, one
#       replayed exchange, artifacts) is an upper bound for it;
#   (2) harness overhead per turn: a 200-turn replay with one read_file call
#       per turn, minus the one-turn run, divided by 200;
#   (3) time from process start to the first model request, measured at a
#       loopback server (testdata/bench/firstrequest), with a warm snapshot
#       cache and without one;
#   (4) 100 runs in a row (one-turn replays of the same root): total and
#       median, without the snapshot cache and with it (empty at the start).
# Usage: bash testdata/bench/run.sh   (from the repository root)
set -euo pipefail
root=$(pwd)
work=${BENCH_DIR:-$(mktemp -d /tmp/harness-bench-run.XXXXXX)}
mkdir -p "$work"
go build -o "$work/harness" ./cmd/harness
go build -o "$work/fakeprovider" ./examples/demo/fakeprovider
go build -o "$work/firstrequest" ./testdata/bench/firstrequest
h="$work/harness"

ws="$work/ws"
if [ ! -d "$ws/skills" ]; then
  mkdir -p "$ws/skills"
  for i in $(seq -w 0 1999); do
    d="$ws/skills/skill-$i"
    mkdir -p "$d/references" "$d/scripts"
    printf -- '---\nname: skill-%s\ndescription: Benchmark skill %s. Use when measuring.\n---\n# Skill %s\nSee [guide](references/guide.md).\n' "$i" "$i" "$i" >"$d/SKILL.md"
    printf 'guide %s\n' "$i" >"$d/references/guide.md"
    printf '#!/bin/bash\necho %s\n' "$i" >"$d/scripts/run.sh"
  done
  echo "hello" >"$ws/file.txt"
fi

# replies: N turns that each read a file, then an answer.
replies() {
  local n=$1 i
  printf '['
  for ((i = 1; i <= n; i++)); do
    printf '{"toolCalls":[{"id":"c%d","name":"read_file","arguments":"{\\"path\\":\\"file.txt\\"}"}]},' "$i"
  done
  printf '{"content":"done"}]\n'
}

record() { # turns cassette
  replies "$1" >"$work/replies-$1.json"
  coproc P { "$work/fakeprovider" "$work/replies-$1.json"; }
  read -r url <&"${P[0]}"
  rm -f "$2"
  HARNESS_API_KEY=bench "$h" run --quiet --workspace "$ws" --skills-root "$ws/skills" --skill skill-0007 \
    --model bench --prompt "bench" --max-turns 0 --base-url "$url" --record "$2" \
    --artifacts-dir "$work/runs" >/dev/null
  exec {P[1]}>&-
  wait "$P_PID" 2>/dev/null || true
}

replay() { # cassette
  "$h" run --quiet --workspace "$ws" --skills-root "$ws/skills" --skill skill-0007 \
    --model bench --prompt "bench" --max-turns 0 --replay "$1" --artifacts-dir "$work/runs" --snapshot-cache "$work/replay-cache" >/dev/null
}

record 0 "$work/one.jsonl"
record 200 "$work/many.jsonl"

best() { # runs command 5 times, prints the best wall time in ms
  local best=999999999999 i s e ms
  for i in 1 2 3 4 5; do
    s=$(date +%s%N); "$@"; e=$(date +%s%N)
    ms=$(((e - s) / 1000))
    ((ms < best)) && best=$ms
  done
  echo "$best"
}
replay "$work/one.jsonl" # warm the page cache
one=$(best replay "$work/one.jsonl")
many=$(best replay "$work/many.jsonl")
per=$(((many - one) / 200))

# Resume: a run stopped after one turn, resumed for one more turn; the
# resume re-scans the 2,000-skill root to check for drift.
resume_once() {
  rm -rf "$work/resume-runs"
  "$h" run --quiet --workspace "$ws" --skills-root "$ws/skills" --skill skill-0007 --model bench --prompt bench \
    --max-turns 1 --replay "$work/many.jsonl" --artifacts-dir "$work/resume-runs" --run-id r >/dev/null || true
  local s e
  s=$(date +%s%N)
  "$h" resume --quiet "$work/resume-runs/r" --max-turns 2 --replay "$work/many.jsonl" >/dev/null || true
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}
res=999999999999
for _ in 1 2 3; do r=$(resume_once); ((r < res)) && res=$r; done
# (3) Each configuration gets its own cache directory, filled by a first run.
cache="$work/snapshot-cache"
rm -rf "$cache"
first_args=(run --quiet --workspace "$ws" --skills-root "$ws/skills" --skill skill-0007 --model bench --prompt bench --artifacts-dir "$work/runs")
"$work/firstrequest" -n 1 -- "$h" "${first_args[@]}" --snapshot-cache "$cache" >/dev/null
first_cached=$("$work/firstrequest" -n 20 -- "$h" "${first_args[@]}" --snapshot-cache "$cache")
first_plain=$("$work/firstrequest" -n 20 -- "$h" "${first_args[@]}" --no-snapshot-cache)

# (4) 100 runs in a row; prints "total_ms median_ms".
in_a_row() {
  local i s e times=()
  for i in $(seq 100); do
    s=$(date +%s%N)
    "$h" run --quiet --workspace "$ws" --skills-root "$ws/skills" --skill skill-0007 \
      --model bench --prompt bench --max-turns 0 --replay "$work/one.jsonl" --artifacts-dir "$work/row-runs" "$@" >/dev/null
    e=$(date +%s%N)
    times+=($(((e - s) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{t[NR]=$1; sum+=$1} END {printf "%.0f %.1f\n", sum/1000, t[int((NR+1)/2)]/1000}'
  rm -rf "$work/row-runs"
}
row_plain=$(in_a_row --no-snapshot-cache)
rm -rf "$work/row-cache"
row_cached=$(in_a_row --snapshot-cache "$work/row-cache")

printf 'skills in root            2000\n'
printf 'one-turn run (upper bound on time to first request)  %d.%03d ms\n' $((one / 1000)) $((one % 1000))
printf '200-turn replay           %d.%03d ms\n' $((many / 1000)) $((many % 1000))
printf 'overhead per turn         %d us (read_file call, journal fsyncs, tool output file)\n' "$per"
printf 'resume with drift check   %d.%03d ms (re-scan of 2000 skills, one more turn)\n' $((res / 1000)) $((res % 1000))
printf 'to first request, cache   %s\n' "$first_cached"
printf 'to first request, none    %s\n' "$first_plain"
printf '100 runs in a row, no cache   total %s ms, median %s ms\n' ${row_plain}
printf '100 runs in a row, cache      total %s ms, median %s ms (the first fills it)\n' ${row_cached}
[ -n "${BENCH_DIR:-}" ] || rm -rf "$work"
