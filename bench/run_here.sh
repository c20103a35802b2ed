#!/usr/bin/env bash
# The development machine's benchmark, one command: sets up and builds (scripts/setup.sh, plus
# TVM 0.25 in .venv-tvm), then runs lockstep CPU against ONNX Runtime CPU and TVM Relax -> LLVM
# side by side at equal threads on the embedded default and every shared model, and prints the
# ratio table with each output's relative L2 against float64 (bench/run_cpu.py).
#   bench/run_here.sh [--threads N] [--rounds R] [--runs K] [--peers ort,tvm] ...
# Time it on a quiet machine: OpenMP threads spin while waiting, so a busy machine skews lockstep's
# numbers most (see bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/setup-tvm.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "bench/run_here.sh on $(hostname), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
exec python3 bench/run_cpu.py --default --peers ort,tvm "$@"
