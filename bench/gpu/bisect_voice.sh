#!/usr/bin/env bash
# Where cuda departs from the float64 reference on the real voice (issue 48): the GPU tests of the
# voice and the float64 encoder, then `lockstep bisect --ref reference --test cuda` on sentences 0
# and 5 (noise off) with cuda's float64 encoder on. Needs build-gpurun/ carried, the voice in
# /tmp/v/voice.onnx and the sentences' inputs in .cache/vparts/s{0,5}/.
set -uo pipefail
PKG=${PKG:-build-gpurun}
mkdir -p /tmp/gpurun
tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"; tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz"
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
B=/tmp/gpurun/bin V=/tmp/v/voice.onnx
# The test binary reads fixtures under the checkout it was built in (support/paths.cpp).
SRC=$(strings $B/lockstep_gpu_tests | grep -m1 -E '^/work/[a-z]+/main$' || true)
[ -n "$SRC" ] && [ ! -e "$SRC" ] && mkdir -p "$(dirname "$SRC")" && ln -s "$PWD" "$SRC"
echo "## lockstep_gpu_tests (compiled-in checkout: $SRC)"
LOCKSTEP_CUDA_F64=1 LOCKSTEP_VOICE=$V timeout 240 $B/lockstep_gpu_tests --gtest_filter='CudaF64Accumulate.*:CudaVoice.*' 2>&1 \
  | grep -E '^\[( +OK|  FAILED|  PASSED|  SKIPPED) |Failure|rel|Expected|Which is' | head -40
for k in 0 5; do
  echo "## LOCKSTEP_CUDA_F64=1 lockstep bisect voice --ref reference --test cuda, sentence $k"
  LOCKSTEP_CUDA_F64=1 timeout 200 $B/lockstep bisect $V --ref reference --test cuda --local all --format markdown \
    --inputs .cache/vparts/s$k/input.npy .cache/vparts/s$k/input_lengths.npy .cache/vparts/s$k/scales.npy 2>&1 | tail -60
done
