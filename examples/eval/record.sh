#!/usr/bin/env bash
# Re-records cassettes/<skill>/ (each cell's exchanges) and
# cassettes/<skill>/grader/ (the grader's). The model and the grader are
# a scripted model: the scripted loopback server of ../demo/fakeprovider
# (package loop/looptest) answering with replies/<skill>.json, written to
# show what the numbers look like; no live model is reachable where this
# project is built. harness records the exchanges exactly as it would
# against a real provider. Cells run one at a time (--jobs 1) so the
# scripted replies meet them in order: every cell of the batch in the
# eval's order, then the grader for each cell that has expectations. Run
# after changing anything a request contains (system prompt, tool
# schemas, the skills, the evals, the grader's prompt).
#   ./record.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
rm -rf .harness/recordings
record() { # SKILL [gate flags...]
  local skill=$1
  shift
  coproc PROVIDER { go run ../demo/fakeprovider "replies/$skill.json"; }
  read -r url <&"${PROVIDER[0]}"
  rm -rf "cassettes/$skill"
  HARNESS_API_KEY=demo-recording-key "$harness" eval "skills/$skill" \
    --model scripted --grader-model scripted-grader --epochs 3 --jobs 1 \
    --base-url "$url" --record "cassettes/$skill" \
    --artifacts-dir .harness/recordings --id "$skill" "$@"
  exec {PROVIDER[1]}>&-
  wait
}
record commit-message --min-delta 0.3
record json-answers
