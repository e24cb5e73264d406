#!/usr/bin/env bash
# Checks out the public skill collections the agreement measurement
# (skills-ref-agreement.mjs) and docs/skills-ref-agreement.md use, at the
# commits the published figures came from, into ./.corpus (git-ignored).
# Needs network access to github.com.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .corpus
while read -r repo commit; do
  dir=".corpus/${repo/\//+}"
  if [ -d "$dir/.git" ] && [ "$(git -C "$dir" rev-parse HEAD)" = "$commit" ]; then
    continue
  fi
  rm -rf "$dir"
  git init -q "$dir"
  git -C "$dir" fetch -q --depth 1 "https://github.com/$repo" "$commit"
  git -C "$dir" -c advice.detachedHead=false checkout -q FETCH_HEAD
  echo "corpus: $repo at $commit" >&2
done <<'LIST'
anthropics/skills 9d2f1ae187231d8199c64b5b762e1bdf2244733d
openai/skills f6b8344b4e519f964d8884d6f60b57991f3f4993
AgentWorkers/skills 1e90d6049ff1436194cb2cd882582fccc6ae38d0
thereisnotime/skills-collection cbf6db9f5fc99fe1a01f4c5e8cca7bee38f5dc8d
LIST
