#!/usr/bin/env bash
# Re-records cassette.jsonl. No live model is reachable from the machines this
# project is built on, so the "model" is the scripted server in fakeprovider/
# answering with replies.json; harness records the exchanges exactly as it
# would against a real provider. Run after changing anything a request
# contains (system prompt, tool schemas, skill text, prompt.txt).
#   ./record.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
coproc PROVIDER { go run ./fakeprovider replies.json; }
read -r url <&"${PROVIDER[0]}"
trap 'exec {PROVIDER[1]}>&-; wait' EXIT
rm -f cassette.jsonl
HARNESS_API_KEY=demo-recording-key "$harness" run \
  --workspace workspace \
  --skills-root workspace/skills \
  --skill release-notes \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --base-url "$url" \
  --record cassette.jsonl \
  --artifacts-dir .harness/recordings
