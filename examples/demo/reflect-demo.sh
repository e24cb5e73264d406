#!/usr/bin/env bash
# Replays the demo, then harness reflect on that run from
# reflect.cassette.jsonl (recorded against the scripted server): the
# proposed skill waits in the skill store for harness skills approve, its
# history naming the demo run. Offline, no key.
#   ./reflect-demo.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
id=demo-$(date -u +%Y%m%dT%H%M%S)-$$
"$harness" run \
  --workspace workspace \
  --skills-root workspace/skills \
  --skill release-notes \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --replay cassette.jsonl \
  --artifacts-dir .harness/runs \
  --run-id "$id" --quiet >/dev/null
"$harness" reflect ".harness/runs/$id" --replay reflect.cassette.jsonl --approve-created none --artifacts-dir .harness/runs
"$harness" skills pending
