#!/usr/bin/env bash
# TVM 0.25 (the bug report's compiler) in its own venv, .venv-tvm: its wheel pins an FFI package
# that must stay at 0.1.12. Exits non-zero (with a message) when it cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# ml_dtypes below 0.7 as in .venv (scripts/setup.sh): 0.7.0 takes 1.3 s to import, every runner start.
if ! .venv-tvm/bin/python3 -c "import tvm, onnx, numpy, ml_dtypes; assert tuple(map(int, ml_dtypes.__version__.split('.')[:2])) < (0, 7)" 2>/dev/null; then
  python3 -m venv .venv-tvm
  .venv-tvm/bin/python3 -m pip install -q --disable-pip-version-check \
    apache-tvm==0.25.0.post1 apache-tvm-ffi==0.1.12 onnx numpy 'ml_dtypes<0.7'
fi
