#!/usr/bin/env bash
# Runs the demo offline: the release-notes skill is preloaded and the model's
# answers come from the recorded cassette, so no network and no key are needed.
#   ./run-demo.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
"$harness" run \
  --workspace workspace \
  --skills-root workspace/skills \
  --skill release-notes \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --replay cassette.jsonl \
  --artifacts-dir .harness/runs
