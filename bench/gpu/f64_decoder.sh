#!/usr/bin/env bash
# Issue 48 point 1, the next step: which float64 prefixes bring cuda within 1e-5 on the real voice.
# bench/voice_accuracy.py on cuda (LOCKSTEP_CUDA_F64=1) against the float64 reference and the cpu
# with the text encoder and parts of the decoder accumulating in float64, and the cached call of the
# longest sentence for each. Each argument is one prefix set ("/enc_p/ /dec/conv_post"). Needs
# build-gpurun/ carried and the voice in /tmp/v/voice.onnx.
set -uo pipefail
PKG=${PKG:-build-gpurun}
mkdir -p /tmp/gpurun
[ -x /tmp/gpurun/bin/lockstep ] || { tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"; tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz"; }
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
export LOCKSTEP_CUDA_F64=1
B=/tmp/gpurun/bin V=/tmp/v/voice.onnx
REFS=${REFS:-reference cpu}
date -u; nvidia-smi --query-gpu=name --format=csv,noheader
python3 - <<'PY'
import json, numpy as np
s = json.load(open("tests/fixtures/piper/sentences.json"))["sentences"][3]
np.save("/tmp/s3.input.npy", np.array([s["ids"]], dtype=np.int64))
np.save("/tmp/s3.input_lengths.npy", np.array([len(s["ids"])], dtype=np.int64))
np.save("/tmp/s3.scales.npy", np.array([0, 1, 0], dtype=np.float32))
PY
for prefixes in "$@"; do
  for ref in $REFS; do
    echo "## --f64-accumulate $prefixes, --ref $ref"
    SECONDS=0
    timeout 250 python3 bench/voice_accuracy.py --voice $V --lockstep $B/lockstep --ref $ref --test cuda -- --f64-accumulate $prefixes
    echo "($SECONDS s)"
  done
  timeout 100 $B/lockstep_bench $V --backend cuda --runs 20 --warmup 3 --f64-accumulate $prefixes \
    --inputs /tmp/s3.input.npy /tmp/s3.input_lengths.npy /tmp/s3.scales.npy | python3 -c '
import json, sys; r = json.loads(sys.stdin.read().strip().splitlines()[-1]); print("sentence 3 cached median ms", round(r["median_ms"], 2))'
done
