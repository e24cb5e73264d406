#!/usr/bin/env bash
# Re-records cassette.jsonl against the scripted server in
# ../demo/fakeprovider answering with replies.json (no live model is
# reachable from the machines this project is built on). Run after changing
# anything a request contains. The run promotes a skill, so it works on a
# copy of the workspace and a throwaway store.
#   ./record.sh [path/to/harness]
set -euo pipefail
harness=$(realpath "${1:-$(command -v harness)}")
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'exec {PROVIDER[1]}>&-; wait; rm -rf "$tmp"' EXIT
cp -r workspace "$tmp/workspace"
coproc PROVIDER { go run ../demo/fakeprovider replies.json; }
read -r url <&"${PROVIDER[0]}"
rm -f cassette.jsonl
HARNESS_API_KEY=forge-recording-key "$harness" run \
  --workspace "$tmp/workspace" \
  --skills-root "$tmp/workspace/skills" \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --allow-tool create_skill \
  --store "$tmp/store" \
  --base-url "$url" \
  --record "$PWD/cassette.jsonl" \
  --artifacts-dir "$tmp/runs"
