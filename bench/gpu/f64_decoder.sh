#!/usr/bin/env bash
# Issue 48 point 1: which float64 prefixes bring cuda within 1e-5 on the real voice. For each
# prefix set (one argument, e.g. "/enc_p/ /dec/conv_post"; "none" for float32 everywhere) cuda's
# audio on the six committed sentences, noise off and on (seed 7), against the float64 reference
# and against the cpu with its default prefixes (/enc_p/), and the cached call of sentences 0 and 3.
# `lockstep run` per sentence, so each side keeps its own prefixes (`lockstep compare` would give
# the cpu the same list); the reference's outputs are made ahead, off the GPU machine (no prefix
# touches them):
#   for k in 0..5, m in off on: lockstep run VOICE --backend reference --seed 7
#       --inputs .cache/f64p/in/${k}_$m/{input,input_lengths,scales}.npy --out .cache/f64p/ref/${k}_$m
# Needs build-gpurun/ unpacked (or carried), .cache/f64p/{in,ref} carried and the voice in /tmp/v.
set -uo pipefail
PKG=${PKG:-build-gpurun}
mkdir -p /tmp/gpurun
[ -x /tmp/gpurun/bin/lockstep ] || { tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"; tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz"; }
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
export LOCKSTEP_CUDA_F64=${LOCKSTEP_CUDA_F64:-1}
B=/tmp/gpurun/bin V=/tmp/v/voice.onnx IN=.cache/f64p/in REF=.cache/f64p/ref W=/tmp/f64p
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
runs() {  # runs BACKEND OUTDIR [lockstep run args...]
  local be=$1 out=$2; shift 2
  for k in 0 1 2 3 4 5; do for m in off on; do
    d=$IN/${k}_$m
    timeout 60 $B/lockstep run $V --backend $be --seed 7 --inputs $d/input.npy $d/input_lengths.npy $d/scales.npy \
      --out $out/${k}_$m "$@" >/dev/null || echo "FAILED: $be ${k}_$m $*"
  done; done
}
if [ ! -f $W/cpu/5_on/output.npy ]; then
  SECONDS=0; runs cpu $W/cpu; echo "## cpu (default prefixes) vs reference ($SECONDS s)"
  python3 bench/gpu/f64_relerr.py $W/cpu $REF
fi
for prefixes in "$@"; do
  tag=$(echo "$prefixes" | tr -c 'A-Za-z0-9._\n' '_')
  SECONDS=0
  runs cuda $W/cuda_$tag --f64-accumulate $prefixes
  echo "## cuda, --f64-accumulate $prefixes ($SECONDS s)"
  python3 bench/gpu/f64_relerr.py $W/cuda_$tag $REF $W/cpu
  for k in 0 3; do
    d=$IN/${k}_off
    timeout 100 $B/lockstep_bench $V --backend cuda --runs 20 --warmup 3 --f64-accumulate $prefixes \
      --inputs $d/input.npy $d/input_lengths.npy $d/scales.npy | python3 -c '
import json, sys; r = json.loads(sys.stdin.read().strip().splitlines()[-1])
print("sentence '$k' cached median ms", round(r["median_ms"], 2), "device", round(r.get("device_median_ms", 0), 2))'
  done
done
