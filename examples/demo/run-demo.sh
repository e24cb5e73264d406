#!/usr/bin/env bash
# Runs the demo offline: the release-notes skill is preloaded and the model's
# answers come from the recorded cassette, so no network and no key are needed.
# HARNESS_WIRE_API=responses replays the recording made over the Responses API.
#   ./run-demo.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
cassette=cassette.jsonl
if [[ ${HARNESS_WIRE_API:-chat} == responses ]]; then
  cassette=cassette.responses.jsonl
fi
"$harness" run \
  --workspace workspace \
  --skills-root workspace/skills \
  --skill release-notes \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --replay "$cassette" \
  --artifacts-dir .harness/runs
