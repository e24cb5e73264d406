#!/usr/bin/env bash
# Runs the example pipeline offline: every phase's model answers come from
# cassettes/<phase>.jsonl (recorded against a scripted server), so no
# network and no key are needed.
#   ./run-pipeline.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
"$harness" pipeline run pipeline.yaml --jobs 2 --replay cassettes --artifacts-dir .harness/pipelines
