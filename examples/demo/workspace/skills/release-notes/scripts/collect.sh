#!/usr/bin/env bash
# Prints the CHANGELOG.md section for one version: collect.sh 1.4.0
set -euo pipefail
version=${1:?usage: collect.sh VERSION}
awk -v v="## $version" '
  index($0, v) == 1 { on = 1; print; next }
  on && /^## / { exit }
  on { print }
' "${CHANGELOG:-/workspace/CHANGELOG.md}"
