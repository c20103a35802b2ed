#!/usr/bin/env bash
# Issue 48, point 1 on the GPU machine: cuda's float64 text encoder (LOCKSTEP_CUDA_F64=1) on the
# real voice. The float64 tests, then the joe voice's committed sentences against the float64
# reference and against the cpu, noise off and on (bench/voice_accuracy.py), with the gate on and
# off, and a cached call's time per sentence both ways (lockstep_bench). Run from the repo root
# with build-gpurun/ carried (bench/gpu/package.sh) and the voice in /tmp/v/voice.onnx.
set -uo pipefail
PKG=${PKG:-build-gpurun}
mkdir -p /tmp/gpurun
tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"; tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz"
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
B=/tmp/gpurun/bin V=${VOICE:-/tmp/v/voice.onnx} PY=${PY:-python3}
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "## lockstep_gpu_tests --gtest_filter='CudaF64Accumulate.*:CudaVoice.*'"
LOCKSTEP_VOICE=$V timeout 240 $B/lockstep_gpu_tests --gtest_filter='CudaF64Accumulate.*:CudaVoice.*' 2>&1 | grep -E '^\[( +OK|  FAILED|  PASSED|  SKIPPED) |Failure|expected|Which is' | head -40
for gate in 0 1; do
  for ref in reference cpu; do
    echo "## LOCKSTEP_CUDA_F64=$gate voice_accuracy --ref $ref --test cuda"
    LOCKSTEP_CUDA_F64=$gate timeout 300 $PY bench/voice_accuracy.py --voice $V --lockstep $B/lockstep --ref $ref --test cuda
  done
done
echo "## cached and first calls, cuda, per sentence (lockstep_bench --runs 20), gate off then on"
W=/tmp/gpurun/sent && mkdir -p $W
$PY - "$W" <<'PY'
import json, sys, numpy as np
w = sys.argv[1]
for k, s in enumerate(json.load(open("tests/fixtures/piper/sentences.json"))["sentences"]):
    np.save(f"{w}/{k}.input.npy", np.array([s["ids"]], dtype=np.int64))
    np.save(f"{w}/{k}.input_lengths.npy", np.array([len(s["ids"])], dtype=np.int64))
    np.save(f"{w}/{k}.scales.npy", np.array([0, 1, 0], dtype=np.float32))
PY
for k in 0 1 2 3 4 5; do
  for gate in 0 1; do
    printf 'sentence %s gate %s: ' $k $gate
    LOCKSTEP_CUDA_F64=$gate timeout 120 $B/lockstep_bench $V --backend cuda --runs 20 --warmup 3 \
      --inputs $W/$k.input.npy $W/$k.input_lengths.npy $W/$k.scales.npy 2>&1 | $PY -c '
import json, sys
t = sys.stdin.read().strip().splitlines()
try:
    r = json.loads(t[-1]); print(f"cached median {r["median_ms"]:.2f} ms, first call {r["first_run_ms"]:.1f} ms, samples {r["output_shape"]}")
except Exception: print(" | ".join(t)[:300])'
  done
done
