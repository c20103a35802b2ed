#!/usr/bin/env bash
# Sanitizer and fuzzing step of CI (docs/security.md), and CI's clang + libc++ build (the
# stand-in for Apple clang, docs/macos.md): builds the `asan` preset (clang-14 with libc++,
# ASan + UBSan, libFuzzer targets; protobuf-lite from Debian's source package and GoogleTest
# from /usr/src/googletest compiled with libc++ in the build folder), runs the CPU
# unit/conformance tests under it, a short soak under LeakSanitizer, then each fuzzer for
# FUZZ_SECONDS (default 60) from seed corpora made here. Budget on 2 idle cores: about 30
# minutes, ~4 of them for libc++ (docs/macos.md has the measurements).
# Environment knobs:
#   FUZZ_SECONDS=60  FUZZ_SEED=<n> (default: time-based, printed)  SOAK_CYCLES=30
#   ASAN_CTEST_EXCLUDE=<regex of ctest names to skip under ASan>  LOCKSTEP_SKIP_APT=1
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  clang-14 libclang-rt-14-dev libomp-14-dev libc++-14-dev libc++abi-14-dev googletest dpkg-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libdnnl-dev libopenblas-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libssl-dev zlib1g-dev
  python3 python3-numpy
)
if [ "${LOCKSTEP_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "ci-sanitizers: installing ${missing[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

BUILD=build-asan
JOBS="$(nproc)"
source scripts/lib/steps.sh  # CI's step table (LOCKSTEP_STEP_LOG; .ci/run)
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
step() { echo; echo "=== ci-sanitizers: $* ($(date +%T))"; }

step_begin "asan: build (clang-14, libc++, ASan+UBSan, protobuf-lite, fuzzers; no CUDA/Vulkan)"
./scripts/fetch-protobuf-source.sh .deps/protobuf
cmake --preset asan >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target lockstep_tests lockstep fuzz_model_load fuzz_npy
step_end

# Sanitizer behaviour: any report fails the test; leaks inside uninstrumented oneDNN/OpenMP/OpenBLAS
# runtimes are suppressed (fuzz/lsan.supp says why), nothing of lockstep's.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$ROOT/fuzz/lsan.supp:print_suppressions=0"
# oneDNN's JIT and OpenMP threads are fine under ASan; keep the pools small on 2 cores.
export OMP_NUM_THREADS=2

step_begin "asan: CPU ctest under ASan/UBSan"
seed_ctest_costs "$BUILD"
# The shared-model oracle tests run the 128-frame decoder in float64 and take minutes under
# ASan; they run in the normal CI build, so they are skipped here by default.
# The Python-driven runner sweeps (ONNX Runtime, TVM) and the decoder-sized bisection sweeps
# exercise the same lockstep code as their small-model cases, which do run here.
# The real Piper voice's float64 reference runs are left to the normal build too (its cpu tests run).
# The ONNX node conformance suite runs in one process after ctest (scripts/run-conformance.sh).
EXCLUDE="${ASAN_CTEST_EXCLUDE:-SharedModels|Soak\\.|OrtBisect|TvmRunner|BisectModelTest.*_dec_|PiperVoice\\.(Sentences|SeededNoise)|PiperArch|PiperBatch\\..*OnTheReference|^Node/OnnxNodeTest\\.}"
ctest --test-dir "$BUILD" -L cpu -E "$EXCLUDE" --output-on-failure -j "$JOBS" --timeout 900 2>&1 | tee "$out"
step_end "$(count_ctest "$out")"
step_begin "asan: ONNX node conformance (one process)"
./scripts/run-conformance.sh "$BUILD/tests/lockstep_tests" 2>&1 | tee "$out"
step_end "$(count_gtest "$out")"

step_begin "asan: soak under LeakSanitizer"
LOCKSTEP_SOAK_CYCLES="${SOAK_CYCLES:-30}" "$BUILD/tests/lockstep_tests" --gtest_filter='Soak.*' 2>&1 | tee "$out"
step_end "$(count_gtest "$out")"

step_begin "asan: fuzzers (fuzz_model_load, fuzz_npy)"
step "seed corpora"
CORPUS="$BUILD/corpus"
rm -rf "$CORPUS" && mkdir -p "$CORPUS/model-seed" "$CORPUS/npy-seed" "$CORPUS/model-new" "$CORPUS/npy-new"
for d in /usr/share/libonnx-testdata/data/node/*/; do
  [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$CORPUS/model-seed/$(basename "$d").onnx"
done
SHARED="$ROOT/../shared/models"
if [ -d "$SHARED" ]; then
  cp "$SHARED"/*.onnx "$CORPUS/model-seed/" 2>/dev/null || true
  cp "$SHARED"/*.npy "$CORPUS/npy-seed/" 2>/dev/null || true
fi
python3 "$ROOT/fuzz/make_npy_seeds.py" "$CORPUS/npy-seed"
cp "$ROOT"/tests/hardening/regressions/*.onnx "$CORPUS/model-seed/" 2>/dev/null || true
echo "model seeds: $(ls "$CORPUS/model-seed" | wc -l), npy seeds: $(ls "$CORPUS/npy-seed" | wc -l)"

SEED="${FUZZ_SEED:-$(date +%s)}"
SECONDS_EACH="${FUZZ_SECONDS:-60}"
ARTIFACTS="$BUILD/fuzz-artifacts"
mkdir -p "$ARTIFACTS"
fail=0
for f in fuzz_model_load fuzz_npy; do
  kind="${f#fuzz_}"; kind="${kind%_load}"
  step "$f for ${SECONDS_EACH}s, -seed=$SEED (reproduce: $BUILD/fuzz/$f -seed=$SEED ...)"
  if ! "$BUILD/fuzz/$f" -seed="$SEED" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 \
       -max_len=1048576 -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$f-" \
       "$CORPUS/$kind-new" "$CORPUS/$kind-seed"; then
    echo "ci-sanitizers: $f FOUND A BUG; the input is in $ARTIFACTS (minimize with -minimize_crash=1," \
         "add it under tests/hardening/regressions/)"
    fail=1
  fi
done
((fail)) || step_end 2
exit "$fail"
