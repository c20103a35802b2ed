#!/usr/bin/env bash
# The 3xTF32 convolution probe on the GPU machine (one device call). Build it here first:
#   mkdir -p build-tc && nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 \
#     bench/gpu/conv3xtf32_probe.cu -lcudnn -o build-tc/conv3xtf32_probe
# then run this with build-tc carried; the table goes to $OUT/probe.log.
set -uo pipefail
BIN=${BIN:-build-tc/conv3xtf32_probe}
OUT=${OUT:-/tmp/probe_out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  timeout "${PROBE_TIMEOUT:-200}" "$BIN" "$@"; echo "exit $?"; } 2>&1 | tee "$OUT/probe.log"
