#!/usr/bin/env bash
# Packs the Python package for the GPU machine (Python 3.12 there, docs/python.md) into
# build-gpupy/ (ignored; carry it): the extension built against a Python 3.12 venv from the CUDA build tree (BUILD, default build/; only the extension is
# rebuilt), the CLI, the system libraries the machine lacks, pytest's wheels, tests/python,
# runners/ and the 174-node shared model. bench/gpu/run_python.sh unpacks and runs it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
PY312=${PY312:-python3.12}
P=build-gpupy
V=/tmp/lockstep-venv312
[ -x $V/bin/python ] || "$PY312" -m venv $V
$V/bin/python -m pip install -q --disable-pip-version-check nanobind
# Forget the cached Python, nanobind and scikit-build-core settings (install-python.sh leaves
# them), so that CMake finds the Python named here and names the module for it.
# An entry goes with the // help lines above it (CMake cannot parse a help line without one).
forget_python() {
  awk '/^\/\// {help = help $0 "\n"; next}
       /^(_?Python_|nanobind_DIR|SKBUILD)/ {help = ""; next}
       {printf "%s%s\n", help, $0; help = ""}' "$B/CMakeCache.txt" > "$B/CMakeCache.txt.new"
  mv "$B/CMakeCache.txt.new" "$B/CMakeCache.txt"
}
forget_python
cmake -S . -B "$B" -DPython_EXECUTABLE=$V/bin/python >/dev/null
ninja -C "$B" -j2 _lockstep lockstep
S=/tmp/gpupy && rm -rf $S && mkdir -p $S/pkg/lockstep $S/bin $S/libs $S/wheels $S/models
cp python/lockstep/*.py $S/pkg/lockstep/
so=$(ls "$B"/python/_lockstep.cpython-312-*.so)
strip -o "$S/pkg/lockstep/$(basename "$so")" "$so"
strip -o $S/bin/lockstep "$B/lockstep"
# GPU_TESTS=1: the C++ GPU suite of the same tree too (run_python.sh runs it first).
if [ "${GPU_TESTS:-0}" = 1 ]; then ninja -C "$B" -j2 tests/lockstep_gpu_tests && strip -o $S/bin/lockstep_gpu_tests "$B/tests/lockstep_gpu_tests"; fi
# Libraries from Debian that the GPU machine does not have (its libc/libstdc++ are newer).
ldd "$so" $S/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|ld-linux*|libdl.so*|librt.so*|libz.so*) ;;
    libcu*|libnv*) ;;  # CUDA's and cuDNN's: the machine has them (LD_LIBRARY_PATH in run_python.sh)
    *) cp -L "$lib" $S/libs/ ;;
  esac
done
$V/bin/python -m pip download -q --disable-pip-version-check -d $S/wheels pytest
mkdir -p $S/tests && cp -r tests/python $S/tests/python && cp -r runners $S/runners
cp ../shared/models/vits_seed_174.* $S/models/
[ "${GPU_TESTS:-0}" = 1 ] && cp ../shared/models/vits_seed_flow_T1024.* ../shared/models/vits_seed_dec_T256.* $S/models/
rm -rf "$P" && mkdir -p "$P"
tar -C $S -cJf "$P/python.tar.xz" .
rm -rf $S
# Back to the Python that scripts/setup.sh configured (.venv's), so the normal tree is unchanged.
forget_python
[ -x .venv/bin/python3 ] && cmake -S . -B "$B" -DPython_EXECUTABLE="$PWD/.venv/bin/python3" >/dev/null
du -sh "$P"/*
