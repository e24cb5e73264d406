#!/usr/bin/env bash
# Re-records cassettes/<phase>.jsonl. The "model" is the scripted server of
# ../demo/fakeprovider answering with replies.json (no live model is
# reachable where this project is built); harness records the exchanges as
# it would against a real provider. Phases run one at a time so the
# scripted replies meet them in order.
#   ./record.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
coproc PROVIDER { go run ../demo/fakeprovider replies.json; }
read -r url <&"${PROVIDER[0]}"
trap 'exec {PROVIDER[1]}>&-; wait' EXIT
rm -rf cassettes .harness/recordings
HARNESS_API_KEY=demo-recording-key "$harness" pipeline run pipeline.yaml \
  --jobs 1 --base-url "$url" --record cassettes --artifacts-dir .harness/recordings
