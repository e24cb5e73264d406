#!/usr/bin/env bash
# Re-records cassette.jsonl (Chat Completions) and cassette.responses.jsonl
# (the Responses API), and reflect.cassette.jsonl: harness reflect on the
# recorded run, proposing a skill (reflect-replies.json). No live model is reachable from the machines this
# project is built on, so the "model" is the scripted server in
# fakeprovider/ answering with replies.json over either API; harness records
# the exchanges exactly as it would against a real provider. Run after
# changing anything a request contains (system prompt, tool schemas, skill
# text, prompt.txt).
#   ./record.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
rm -rf .harness/recordings
record() { # WIRE CASSETTE
  coproc PROVIDER { go run ./fakeprovider replies.json; }
  read -r url <&"${PROVIDER[0]}"
  rm -f "$2"
  HARNESS_API_KEY=demo-recording-key "$harness" run \
    --workspace workspace \
    --skills-root workspace/skills \
    --skill release-notes \
    --model gpt-4.1-mini \
    --wire-api "$1" \
    --prompt-file prompt.txt \
    --base-url "$url" \
    --record "$2" \
    --run-id "recorded-$1" \
    --artifacts-dir .harness/recordings
  exec {PROVIDER[1]}>&-
  wait
}
record chat cassette.jsonl
record responses cassette.responses.jsonl
coproc PROVIDER { go run ./fakeprovider reflect-replies.json; }
read -r url <&"${PROVIDER[0]}"
rm -f reflect.cassette.jsonl
HARNESS_API_KEY=demo-recording-key "$harness" reflect .harness/recordings/recorded-chat \
  --base-url "$url" \
  --approve-created none \
  --store .harness/recordings-store \
  --record reflect.cassette.jsonl \
  --artifacts-dir .harness/recordings
exec {PROVIDER[1]}>&-
wait
