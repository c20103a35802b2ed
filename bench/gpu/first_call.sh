#!/usr/bin/env bash
# Issue 48 point 2 on the real joe voice: a new length's first call against a cached call, at about
# 1, 4 and 13 s of audio (sentences 0+5, 2, 3+4 of tests/fixtures/piper/sentences.json joined),
# each in a warm process primed with sentence 1 (lockstep_bench --prime: first_run_ms is the new
# length's first call). Each argument is one --f64-accumulate list ("none": float32 everywhere).
# REPEAT processes per length; the last one with LOCKSTEP_TRACE_SHAPES=1 LOCKSTEP_CUDA_COMPILE_TIMES=1,
# its stderr in $OUT/trace_<set>_<length>.txt. Needs build-gpurun/ and the voice in /tmp/v.
# BIN_DIR=... times another build's lockstep_bench (an A/B on one machine; TAG names its traces).
set -uo pipefail
PKG=${PKG:-build-gpurun}
mkdir -p /tmp/gpurun
[ -x /tmp/gpurun/bin/lockstep ] || { tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"; tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz"; }
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
export LOCKSTEP_CUDA_F64=${LOCKSTEP_CUDA_F64:-1}
B=${BIN_DIR:-/tmp/gpurun/bin} V=/tmp/v/voice.onnx F=/tmp/firstcall OUT=${OUT:-/tmp/out}
mkdir -p $F $OUT
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 - <<'PY'
import json, numpy as np
S = json.load(open("tests/fixtures/piper/sentences.json"))["sentences"]
join = lambda a, b: a[:-1] + b[2:]  # drop a's EOS and b's BOS and pad
sets = {"1s": join(S[0]["ids"], S[5]["ids"]), "4s": S[2]["ids"], "13s": join(S[3]["ids"], S[4]["ids"]), "prime": S[1]["ids"]}
for name, ids in sets.items():
    np.save(f"/tmp/firstcall/{name}.input.npy", np.array([ids], dtype=np.int64))
    np.save(f"/tmp/firstcall/{name}.input_lengths.npy", np.array([len(ids)], dtype=np.int64))
    np.save(f"/tmp/firstcall/{name}.scales.npy", np.array([0.667, 1, 0.8], dtype=np.float32))
PY
ROW=$(cat <<'PY'
import json, os, sys
r = json.loads(sys.stdin.read())
s = r["output_shape"][-1] / 22050
print(f"{os.environ.get('TAG', '')}{os.environ['LEN']} ({s:.2f} s audio) run {os.environ['RUN']}: first {r['first_run_ms']:.1f} ms (compile "
      f"{r.get('first_run_compile_ms', 0):.1f}, misses {r.get('first_run_misses')}), cached {r['median_ms']:.2f} ms "
      f"(device {r.get('device_median_ms', 0):.2f}), first/cached {r['first_run_ms'] / r['median_ms']:.2f}")
PY
)
args() { echo "$F/$1.input.npy $F/$1.input_lengths.npy $F/$1.scales.npy"; }
for prefixes in "$@"; do
  tag=$(echo -n "$prefixes" | tr -c 'A-Za-z0-9._' '_')
  echo "## --f64-accumulate $prefixes"
  for len in 1s 4s 13s; do
    for r in $(seq 1 ${REPEAT:-2}); do
      env=(); err=/dev/null
      if [ "$r" = "${REPEAT:-2}" ]; then env=(LOCKSTEP_TRACE_SHAPES=1 LOCKSTEP_CUDA_COMPILE_TIMES=1); err=$OUT/trace_${TAG:-}${tag}_$len.txt; fi
      env ${env[@]+"${env[@]}"} timeout 120 $B/lockstep_bench $V --backend cuda --runs 20 --warmup 3 --f64-accumulate $prefixes \
        --prime $(args prime) --inputs $(args $len) 2>$err | tail -1 | TAG=${TAG:-} LEN=$len RUN=$r python3 -c "$ROW"
    done
  done
done
