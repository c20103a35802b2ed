#!/usr/bin/env bash
# Builds the CUDA binaries here and packs what the GPU machine lacks into build-gpurun/ (ignored;
# carry it): the stripped binaries as bin.tar.xz, libs.tar.xz (system libraries absent there), data.tar.xz (three
# shared models, the ONNX node tests lockstep supports, the shared benchmark tools).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BUILD:-build-cuda}
P=build-gpurun
cmake -S . -B "$B" -G Ninja -DLOCKSTEP_CUDA=ON >/dev/null
# CPU_TESTS=1 also packs the CPU test suite and the conv bench (run_gpu.sh's "cputests" step).
extra=(); [ "${CPU_TESTS:-0}" = 1 ] && extra=("$B/tests/lockstep_tests" "$B/lockstep_conv_bench")
ninja -C "$B" -j2 lockstep lockstep_bench tests/lockstep_gpu_tests ${extra[@]+"${extra[@]#$B/}"}
rm -rf "$P" && mkdir -p "$P"
mkdir -p /tmp/gpupkg_bin/bin && for f in "$B/lockstep" "$B/lockstep_bench" "$B/tests/lockstep_gpu_tests" ${extra[@]+"${extra[@]}"}; do strip -o "/tmp/gpupkg_bin/bin/$(basename "$f")" "$f"; done
tar -C /tmp/gpupkg_bin -cJf "$P/bin.tar.xz" bin  # run_gpu.sh unpacks it
L=/lib/x86_64-linux-gnu
libs=(libdnnl.so.2 libgomp.so.1 libOpenCL.so.1)
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libblas.so.3; do
  ldd /tmp/gpupkg_bin/bin/* | grep -q "$lib" && libs+=("$lib")
done
mkdir -p /tmp/gpupkg/libs && for lib in "${libs[@]}"; do cp -L "$L/$lib" /tmp/gpupkg/libs/ 2>/dev/null || true; done
# openblas resolves through alternatives; take what the loader found.
for lib in "${libs[@]}"; do p=$(ldd /tmp/gpupkg_bin/bin/lockstep | awk -v l="$lib" '$1==l {print $3}'); [ -n "$p" ] && cp -L "$p" /tmp/gpupkg/libs/; done
tar -C /tmp/gpupkg -cJf "$P/libs.tar.xz" libs
rm -rf /tmp/gpupkg /tmp/gpupkg_bin
D=/tmp/gpudata && rm -rf $D && mkdir -p $D/models $D/node $D/tools
models=(vits_seed_174 vits_seed_flow_T1024 vits_seed_dec_T256)
# The low decoder (35 MB of weights) travels in a call of its own: LOW_DEC=1 packs it into
# build-gpulowdec/ (carry it, copy it to /tmp there; run_gpu.sh unpacks /tmp/build-gpulowdec).
if [ "${LOW_DEC:-0}" = 1 ]; then
  rm -rf build-gpulowdec && mkdir -p build-gpulowdec
  tar -C ../shared/models -cJf build-gpulowdec/lowdec.tar.xz $(cd ../shared/models && ls vits_low_dec_T128.*)
fi
for m in "${models[@]}"; do cp ../shared/models/$m.* $D/models/; done
python3 - "$D/node" <<'PY'
import os, re, shutil, sys, onnx
ops = set(re.findall(r'LOCKSTEP_OP\(\w+, "(\w+)"', open("src/ir/ops.inc").read())) | {"Constant"}
base = "/usr/share/libonnx-testdata/data/node"
for d in sorted(os.listdir(base)):
    p = f"{base}/{d}/model.onnx"
    if os.path.exists(p) and all(n.domain in ("", "ai.onnx") and n.op_type in ops for n in onnx.load(p).graph.node):
        shutil.copytree(f"{base}/{d}", f"{sys.argv[1]}/{d}")
PY
# PIPER_SRC=DIR (a folder holding piper/train/vits, e.g. unzipped from the piper-tts wheel) packs
# Piper's model code for run_gpu.sh's "piper" step.
if [ -n "${PIPER_SRC:-}" ]; then mkdir -p "$P/piper" && cp -r "$PIPER_SRC/piper" "$P/piper/"; fi
cp ../shared/tools/vits_export.py ../shared/tools/bench_peers.py ../shared/tools/ort_run.py $D/tools/
tar -C $D -cJf "$P/data.tar.xz" models node tools
rm -rf $D
du -sh "$P"/*
