#!/usr/bin/env bash
# Runs the SkillForge example offline from its cassette (recorded against a
# scripted model): the model writes csv-rows, its first draft fails its own
# test in the sandbox, the second passes and is promoted. The run works on a
# copy of the workspace, so the example stays as it is; the copy, the store
# and the run directory are left in .harness/forge-example/ to look at.
#   ./run-forge.sh [path/to/harness]
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:-harness}
out=.harness/forge-example
rm -rf "$out"
mkdir -p "$out"
cp -r workspace "$out/workspace"
"$harness" run \
  --workspace "$out/workspace" \
  --skills-root "$out/workspace/skills" \
  --model gpt-4.1-mini \
  --prompt-file prompt.txt \
  --allow-tool create_skill \
  --store "$out/store" \
  --replay cassette.jsonl \
  --artifacts-dir "$out/runs" \
  --run-id forge
"$harness" skills versions csv-rows --store "$out/store"
"$harness" skills audit verify --store "$out/store"
