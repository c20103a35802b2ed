#!/usr/bin/env bash
# The 3xTF32 tensor-core Conv (issue 6): probe, GPU tests and whole-model A/B in one device call.
#
# Here (development machine):  bash bench/gpu/run_probe.sh pack
#   builds the probe (nvcc) and the CUDA build in build-tc/cuda, and packs build-tc/pkg (ignored).
# There (run tool, carry ["build-tc/pkg"]):  bash bench/gpu/run_probe.sh
#   STEPS (default "probe tests models"): probe = the kernel table (variant x shape: ms, TFLOP/s,
#   rel L2 vs float64, cuDNN FMA beside it); tests = lockstep_gpu_tests (GTEST_FILTER);
#   models = seed/low/ljs decoders at FRAMES (1024), exported as bench_gpu.py does, lockstep cuda
#   with the tensor-core Conv, with LOCKSTEP_CUDA_CONV_TC=0 (cuDNN) and with the opt-in paths
#   (MODEL_VARIANTS=tc,cudnn,... picks), rel L2 vs float64; profile of the last variant.
# Logs go to $OUT.
set -uo pipefail
PKG=${PKG:-build-tc/pkg}
if [ "${1:-}" = pack ]; then
  set -e
  cmake -S . -B build-tc/cuda -G Ninja -DLOCKSTEP_CUDA=ON >/dev/null
  ninja -C build-tc/cuda -j2 lockstep_bench tests/lockstep_gpu_tests
  rm -rf "$PKG" && mkdir -p "$PKG/libs" "$PKG/tools" "$PKG/models"
  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 bench/gpu/conv3xtf32_probe.cu -lcudnn -o "$PKG/conv3xtf32_probe" \
    -Xptxas -v 2> build-tc/ptxas.log  # registers and spills per instantiation
  grep -B1 "spill stores" build-tc/ptxas.log | grep -A1 "conv1d_3xtf32" | grep -E "^ptxas info    : Compiling|spill" | paste - - | grep -v " 0 bytes spill stores" || true
  for f in build-tc/cuda/lockstep_bench build-tc/cuda/tests/lockstep_gpu_tests; do strip -o "$PKG/$(basename "$f")" "$f"; done
  for lib in libdnnl.so.2 libgomp.so.1 libOpenCL.so.1 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libblas.so.3; do
    p=$(ldd "$PKG/lockstep_bench" | awk -v l="$lib" '$1==l {print $3}'); [ -n "$p" ] && cp -L "$p" "$PKG/libs/" || true
  done
  tar -C "$PKG" -cJf "$PKG/libs.tar.xz" libs && rm -rf "$PKG/libs"
  cp ../shared/tools/vits_export.py ../shared/tools/bench_peers.py "$PKG/tools/"
  for m in vits_seed_174 vits_seed_dec_T256 vits_seed_flow_T1024; do cp ../shared/models/$m.* "$PKG/models/"; done
  du -sh "$PKG"
  exit 0
fi
OUT=${OUT:-/tmp/probe_out}
STEPS=${STEPS:-probe tests models}
mkdir -p "$OUT" /tmp/tcrun
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/tcrun/libs
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for step in $STEPS; do case $step in
probe)
  timeout "${PROBE_TIMEOUT:-60}" "$PKG/conv3xtf32_probe" 2>&1 | tee "$OUT/probe.log" | grep -E "device|backend choice|cuDNN" ;;
tests)
  tar -C /tmp/tcrun -xJf "$PKG/libs.tar.xz"
  # tests/support/fixtures.cpp reads /work/shared/models (the source tree's sibling).
  [ -e /work/shared/models ] || { mkdir -p /work/shared && ln -s "$PWD/$PKG/models" /work/shared/models; }
  export LOCKSTEP_MODELS_DIR=$PWD/$PKG/models
  timeout "${TESTS_TIMEOUT:-100}" "$PKG/lockstep_gpu_tests" --gtest_filter="${GTEST_FILTER:--Node/CudaOnnxNode.*:CudaOnnxNodeSuite.*:BisectCuda.*}" 2>&1 \
    | tee "$OUT/gpu_tests.log" | grep -E "^\[conv_tc\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED|Failure|tests ran" ;;
models)
  tar -C /tmp/tcrun -xJf "$PKG/libs.tar.xz"
  timeout "${MODELS_TIMEOUT:-110}" python3 - "$PKG" <<'PY' 2>&1 | grep --line-buffered -v -i "deprecat\|torch.onnx.export\|warn" | tee "$OUT/models.log"
import json, os, sys
pkg = sys.argv[1]
sys.path[:0] = [pkg + "/tools", "bench/gpu"]
import vits_export, bench_gpu
frames = int(os.environ.get("FRAMES", "1024"))
os.makedirs("/tmp/tcrun/work", exist_ok=True)
rows = []
for name in os.environ.get("PRESETS", "seed,low,ljs").split(","):
    stem = bench_gpu.export(name, frames, "/tmp/tcrun/work", vits_export)
    # Variants: default routing, cuDNN only, kernel 1 opted in, without C < 32, default again.
    variants = [("tc", {}), ("cudnn", {"LOCKSTEP_CUDA_CONV_TC": "0"}), ("tc+k1", {"LOCKSTEP_CUDA_CONV_TC_K1": "1"}),
                ("tc, C>=32 only", {"LOCKSTEP_CUDA_CONV_TC_SMALL": "0"}), ("tc again", {})]
    if os.environ.get("MODEL_VARIANTS"):
        keep = os.environ["MODEL_VARIANTS"].split(",")
        variants = [v for v in variants if v[0] in keep]
    res = {}
    for label, env in variants:
        res[label], _ = bench_gpu.lockstep(pkg + "/lockstep_bench", stem, 30, dict(env))
        print(json.dumps(dict(preset=name, conv=label, **res[label])), flush=True)
    rows.append((name, res))
    for label, env in variants[-1:]:
        env = dict(env, LOCKSTEP_CUDA_PROFILE="1")
        _, err = bench_gpu.lockstep(pkg + "/lockstep_bench", stem, 3, env)
        with open(os.environ.get("OUT", "/tmp") + "/profile.log", "a") as f:
            f.write(f"=== {name} T{frames} conv={label}\n{err}\n")
labels = [v[0] for v in variants]
print(f"\n| preset (T{frames}) | " + " | ".join(f"{l} ms | rel L2" for l in labels) + " |")
print("|---|" + "---|---|" * len(labels))
for name, res in rows:
    cells = []
    for l in labels:
        r = res[l]
        cells.append(f"{r['median_ms']:.2f} | {r['rel_l2']:.2e}" if "median_ms" in r else f"n/a ({r.get('error', '')[-60:]!r}) | n/a")
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
  ;;
esac; done
