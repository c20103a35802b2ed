#!/usr/bin/env bash
# Installs the Python package (python/, docs/python.md) into .venv from the build tree that
# scripts/setup.sh made (BUILD_DIR, default build/): scikit-build-core re-runs CMake on that tree
# with the same settings, so nothing is compiled twice, and installs the "python" component
# (the extension, its stubs, the CLI). A user's `pip install .` builds its own tree instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  echo "install-python: no build tree at $BUILD_DIR (run scripts/setup.sh first)" >&2
  exit 2
fi
PY="$PWD/.venv/bin/python3"
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
  -C build-dir="$BUILD_DIR" -C cmake.define.LOCKSTEP_TESTS=ON -C cmake.define.Python_EXECUTABLE="$PY" .
"$PY" -c "import lockstep, sys; print('install-python: lockstep', lockstep.__version__, 'from', lockstep.__file__)"
