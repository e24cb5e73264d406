#!/usr/bin/env bash
# Runs the example evals offline: every cell's model answers and every
# grading come from cassettes/<skill>/ (recorded against a scripted model,
# see record.sh), so no network and no key are needed. commit-message
# helps the scripted model (the delta shows, and the gate --min-delta 0.3
# is met); json-answers does not (delta 0: its checks and expectation
# pass in every configuration and are flagged as not discriminating).
# Each eval's directory stays in .harness/evals/.
#   ./run-eval.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
eval() { # SKILL [gate flags...]
  local skill=$1
  shift
  echo "== $skill: cells and grader a scripted model, replayed from cassettes/$skill"
  "$harness" eval "skills/$skill" --model scripted --grader-model scripted-grader --epochs 3 --jobs 2 --quiet \
    --replay "cassettes/$skill" --artifacts-dir .harness/evals "$@"
}
eval commit-message --min-delta 0.3
eval json-answers
