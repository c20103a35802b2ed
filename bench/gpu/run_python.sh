#!/usr/bin/env bash
# On the GPU machine: unpacks build-gpupy/python.tar.xz (bench/gpu/package-python.sh) and runs the
# Python package's tests with PyTorch's Python (torch, onnx, onnxruntime there), the CUDA ones
# included: LOCKSTEP_PYTEST_ARGS adds pytest arguments.
set -euo pipefail
W=/tmp/lockstep-py && rm -rf $W && mkdir -p $W
tar -C $W -xJf build-gpupy/python.tar.xz
PY=/opt/torch/.venv/bin/python
$PY -m pip install -q --no-index --find-links $W/wheels --target $W/site pytest >/dev/null
export PYTHONPATH=$W/pkg:$W/site
export PATH=$W/bin:$PATH
export LD_LIBRARY_PATH=$W/libs:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export LOCKSTEP_MODELS_DIR=$W/models LOCKSTEP_CLI=$W/bin/lockstep
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ -x $W/bin/lockstep_gpu_tests ]; then  # GPU_TESTS=1 packages: the C++ GPU suite first
  LOCKSTEP_MODELS_DIR=$W/models $W/bin/lockstep_gpu_tests --gtest_brief=1 2>&1 | tail -15
fi
cd $W && $PY -m pytest -q -rs -p no:cacheprovider tests/python ${LOCKSTEP_PYTEST_ARGS:-}
