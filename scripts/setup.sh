#!/usr/bin/env bash
# Installs what lockstep needs to build and test on Debian 12 (apt packages by name), then
# configures and builds into build/. CUDA is built when nvcc is found (PATH or /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libdnnl-dev libopenblas-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libssl-dev zlib1g-dev
  python3 python3-dev python3-numpy python3-venv chromium
  mesa-vulkan-drivers libvulkan-dev glslc
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The compiler cache (CMakeLists.txt, docs/ci.md) lives outside the checkout (~/.cache/ccache),
# sized to hold the Release, sanitizer and arm64 trees together.
ccache --max-size "${LOCKSTEP_CCACHE_SIZE:-12G}" >/dev/null
# LOCKSTEP_APT_ONLY=1: the packages only (scripts/build-wheel.sh builds its own tree).
[ "${LOCKSTEP_APT_ONLY:-0}" = 1 ] && exit 0

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# Python peers and helpers for tests and benchmarks (ONNX Runtime, onnx, numpy) in a local venv;
# scripts/test.sh puts it first on PATH so tests that call python3 find them.
if [ "${LOCKSTEP_SKIP_VENV:-0}" != 1 ]; then
  # nanobind, scikit-build-core and pytest: the Python package (python/, docs/python.md) is built
  # with the rest below and installed into .venv by scripts/test.sh.
  # ml_dtypes (onnx's dependency) below 0.7: 0.7.0's extension takes 1.3 s to import here against
  # 0.15 s for 0.6.0, and every runner process the tests start imports onnx (docs/ci.md).
  # piper-tts 1.8.0 (GPL-3.0-or-later) for lockstep.piper's tests: its phonemizer and the peer they
  # compare with (docs/piper.md); lockstep itself does not depend on it. Starlette and uvicorn for
  # lockstep.piper.http_server, websockets for driving Chromium in its page's test. Ray, pyarrow
  # (psutil to kill a worker in a test, tqdm for the bar) for lockstep.corpus.
  if [ ! -x .venv/bin/python3 ] || ! .venv/bin/python3 -c "import numpy, onnx, onnxruntime, nanobind, scikit_build_core, pytest, piper, ml_dtypes, starlette, uvicorn, websockets, ray, pyarrow, psutil, tqdm; assert tuple(map(int, ml_dtypes.__version__.split('.')[:2])) < (0, 7)" 2>/dev/null; then
    [ -x .venv/bin/python3 ] || python3 -m venv .venv
    .venv/bin/python3 -m pip install -q --disable-pip-version-check numpy onnx onnxruntime nanobind scikit-build-core pytest \
      'ml_dtypes<0.7' 'piper-tts==1.8.0' starlette uvicorn websockets ray pyarrow psutil tqdm
  fi
fi
# The extension is built against .venv's Python when there is one (nanobind comes from there).
if [ -x .venv/bin/python3 ]; then
  LOCKSTEP_CMAKE_ARGS="-DPython_EXECUTABLE=$PWD/.venv/bin/python3 ${LOCKSTEP_CMAKE_ARGS:-}"
fi

BUILD_DIR="${BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${LOCKSTEP_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$(nproc)"
