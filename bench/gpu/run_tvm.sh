#!/usr/bin/env bash
# On the GPU machine, three calls made back to back (bench/gpu/package-tvm.sh):
#   bash bench/gpu/run_tvm.sh 1    carrying build-tvm1/: the wheel's first third to /tmp
#   bash bench/gpu/run_tvm.sh 2    carrying build-tvm2/: the second third and the small wheels
#   bash bench/gpu/run_tvm.sh 3    carrying build-tvm3/: the rest, then TVM-CUDA through lockstep:
#       check's table, fresh bisection, determinism (fresh processes and one runner process),
#       in-process bisection (ONLY_CHECK=1: the table alone)
set -euo pipefail
case "${1:-}" in
  1|2) mkdir -p /tmp/tvm-parts && cp build-tvm$1/* /tmp/tvm-parts/ && ls -la /tmp/tvm-parts; exit 0 ;;
esac
W=/tmp/lockstep-tvm && rm -rf $W && mkdir -p $W/site
whl=$(ls /tmp/tvm-parts/*.whl.00); whl=${whl%.00}
cat /tmp/tvm-parts/*.whl.00 /tmp/tvm-parts/*.whl.01 build-tvm3/*.whl.02 > $W/$(basename "$whl")
PY=/opt/torch/.venv/bin/python
$PY -m pip install -q --no-deps --no-index --target $W/site $W/*.whl /tmp/tvm-parts/*.whl
tar -C $W -xJf build-tvm3/pack.tar.xz
export LD_LIBRARY_PATH=$W/libs:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONPATH=$W/site
M=$W/models/vits_seed_174
IN="--inputs $M.z_p.npy $M.y_mask.npy"
TVM="$PY $PWD/runners/tvm_runner.py --target cuda"
L=$W/bin/lockstep
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== check: the report's table, TVM-CUDA against lockstep's float64 reference"
time $L check $M.onnx $IN --ref reference --test "$TVM" --format markdown || true
[ "${ONLY_CHECK:-0}" = 1 ] && exit 0
echo "== bisect, fresh processes"; time $L bisect $M.onnx $IN --test "$TVM" || true
echo "== determinism: fresh processes and one runner process"; time $L determinism $M.onnx $IN --backend "$TVM" --runs 2 || true
echo "== bisect --in-process"; time $L bisect $M.onnx $IN --test "$TVM" --in-process || true
