#!/usr/bin/env bash
# Sets up (apt packages), builds, and runs every test. GPU tests skip with a message when no
# GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -x .venv/bin/python3 ] && export PATH="$PWD/.venv/bin:$PATH"
BUILD_DIR="${BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" "$@"
