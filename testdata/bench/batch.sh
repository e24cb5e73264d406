#!/usr/bin/env bash
# Measures `harness batch` overhead, offline: a 50-skill root, tasks that
# each make one model request replayed from one shared cassette (recorded
# against the scripted loopback provider, examples/demo/fakeprovider), so
# what is timed is harness itself: snapshot, run directory, journal,
# artifacts, the batch's own records.
#   (1) 1,000 tasks with --jobs equal to the cores: tasks per second;
#   (2) 200 tasks with --jobs 1: wall time per task, i.e. the overhead a
#       task adds when nothing else runs beside it.
# Usage: bash testdata/bench/batch.sh   (from the repository root)
set -euo pipefail
work=${BENCH_DIR:-$(mktemp -d /tmp/harness-bench-batch.XXXXXX)}
mkdir -p "$work"
go build -o "$work/harness" ./cmd/harness
go build -o "$work/fakeprovider" ./examples/demo/fakeprovider
h="$work/harness"
ws="$work/ws"
if [ ! -d "$ws/skills" ]; then
  for i in $(seq -w 0 49); do
    d="$ws/skills/skill-$i"
    mkdir -p "$d/references" "$d/scripts"
    printf -- '---\nname: skill-%s\ndescription: Benchmark skill %s. Use when measuring.\n---\n# Skill %s\nSee [guide](references/guide.md).\n' "$i" "$i" "$i" >"$d/SKILL.md"
    printf 'guide %s\n' "$i" >"$d/references/guide.md"
    printf '#!/bin/bash\necho %s\n' "$i" >"$d/scripts/run.sh"
  done
fi
batch() { # n file
  {
    printf 'defaults: {model: bench, workspace: ws, skills-root: [ws/skills]}\n'
    printf 'task: {prompt: "Handle one item.", skills: [skill-07]}\n'
    printf 'matrix:\n  n: ['
    seq -s, 1 "$1"
    printf ']\n'
  } >"$2"
}
batch 1 "$work/one.yaml"
batch 1000 "$work/thousand.yaml"
batch 200 "$work/two-hundred.yaml"

echo '[{"content":"done"}]' >"$work/replies.json"
coproc P { "$work/fakeprovider" "$work/replies.json"; }
read -r url <&"${P[0]}"
rm -rf "$work/cassettes"
HARNESS_API_KEY=bench "$h" batch run "$work/one.yaml" --quiet --base-url "$url" --record "$work/cassettes" \
  --artifacts-dir "$work/runs" >/dev/null
exec {P[1]}>&-
wait "$P_PID" 2>/dev/null || true
cassette=$(ls "$work"/cassettes/*.jsonl)

cores=$(nproc)
for round in 1 2 3; do
  rm -rf "$work/runs"
  /usr/bin/time -f "%e %U %S" -o "$work/t1000" "$h" batch run "$work/thousand.yaml" --quiet --jobs "$cores" \
    --replay "$cassette" --artifacts-dir "$work/runs" >/dev/null
  read -r wall user sys <"$work/t1000"
  /usr/bin/time -f "%e %U %S" -o "$work/t200" "$h" batch run "$work/two-hundred.yaml" --quiet --jobs 1 \
    --replay "$cassette" --artifacts-dir "$work/runs" >/dev/null
  read -r wall1 _ _ <"$work/t200"
  awk -v w="$wall" -v u="$user" -v s="$sys" -v w1="$wall1" -v c="$cores" -v r="$round" 'BEGIN {
    printf "round %d: 1,000 tasks, --jobs %d: %.2f s wall, %.0f tasks/s, %.1f ms CPU per task; 200 tasks, --jobs 1: %.1f ms per task\n",
      r, c, w, 1000 / w, (u + s) * 1000 / 1000, w1 * 1000 / 200 }'
done

# The report of the last 1,000-task batch: generating it, the index's
# size, and the index opened in headless Chromium (a page that loads
# nothing else), against Chromium opening an empty page.
thousand=$(ls -dt "$work"/runs/*/ | while read -r d; do [ "$(ls "$d/batch" | wc -l)" = 1000 ] && echo "$d" && break; done)
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$thousand" ]; then
  /usr/bin/time -f "%e" -o "$work/trep" "$h" report "$thousand" -o "$work/report/index.html" >/dev/null
  printf '<!doctype html><title>empty</title>' >"$work/report/empty.html"
  size=$(stat -c %s "$work/report/index.html")
  pages=$(ls "$work/report/index.files" | wc -l)
  echo "report of 1,000 tasks: $(cat "$work/trep") s to write; index $((size / 1024)) KiB, $pages task pages"
  if [ -n "$chrome" ]; then
    load() { /usr/bin/time -f "%e" -o "$work/tload" "$chrome" --headless --no-sandbox --disable-gpu --dump-dom "file://$1" >/dev/null 2>&1; cat "$work/tload"; }
    for round in 1 2 3; do
      echo "round $round: Chromium opens the index in $(load "$work/report/index.html") s, an empty page in $(load "$work/report/empty.html") s"
    done
  fi
fi
