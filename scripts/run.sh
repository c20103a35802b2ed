#!/usr/bin/env bash
# Sets up (apt packages), builds, and runs `lockstep check` on the embedded default graph.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
"${BUILD_DIR:-build}/lockstep" check "$@"
