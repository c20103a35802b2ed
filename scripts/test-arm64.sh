#!/usr/bin/env bash
# arm64 Linux (aarch64): cross-builds lockstep on a Debian 12 x86-64 host and runs the CPU tests
# under qemu-user (docs/cpu.md, "arm64 (Linux aarch64)"). Exits non-zero on any failure.
#   1. host packages (apt): the cross compiler, qemu-user-static, cmake/ninja, the host protoc
#   2. an arm64 sysroot in build-arm64/sysroot: Debian's arm64 .debs fetched with
#      `apt-get download` and unpacked with `dpkg -x`; nothing arm64 is installed on the host
#   3. cmake/aarch64-linux-gnu.cmake, -DLOCKSTEP_CUDA=OFF, targets lockstep and lockstep_tests
#   4. ctest -L cpu minus the exclusions below, each test binary run by qemu-aarch64-static
#      with QEMU_CPU (default neoverse-n1: ARMv8.2, NEON, no SVE, like Apple Silicon)
# Knobs: QEMU_CPU=<model>, LOCKSTEP_ARM64_JOBS=N (build and test parallelism, default nproc),
#   LOCKSTEP_ARM64_EXCLUDE=<ctest -E regex> (replaces the default exclusions),
#   LOCKSTEP_SKIP_APT=1 (no apt-get install/update: the host packages are there already).
# Extra arguments go to ctest (e.g. -R Winograd).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUILD="$ROOT/build-arm64"
SYSROOT="$BUILD/sysroot"
JOBS="${LOCKSTEP_ARM64_JOBS:-$(nproc)}"
export QEMU_CPU="${QEMU_CPU:-neoverse-n1}"
T0=$SECONDS
step() { echo; echo "=== test-arm64: $* ($(date +%T), $(((SECONDS - T0) / 60))m$(((SECONDS - T0) % 60))s)"; }
source scripts/lib/steps.sh  # CI's step table (LOCKSTEP_STEP_LOG; .ci/run)
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
step_begin "arm64: host packages, sysroot, cross build"

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# --- 1. host packages (amd64) --------------------------------------------------------------
HOST_PACKAGES=(
  cmake ninja-build ccache protobuf-compiler crossbuild-essential-arm64 qemu-user-static
  libonnx-testdata python3 python3-numpy
)
if [ "${LOCKSTEP_SKIP_APT:-0}" != 1 ]; then
  step "host packages"
  updated=0
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  # apt's lists must know the arm64 packages (a fresh machine, or arm64 just added).
  if ! apt-cache show libdnnl2:arm64 >/dev/null 2>&1; then
    $SUDO apt-get update -qq; updated=1
  fi
  missing=()
  for p in "${HOST_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "test-arm64: installing ${missing[*]}"
    ((updated)) || $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# --- 2. arm64 sysroot ----------------------------------------------------------------------
# The arm64 -dev packages are Multi-Arch: same, but apt co-installs those only at exactly the
# host's amd64 version: installing them would upgrade (or be refused next to) the host's
# libssl-dev, zlib1g-dev, libc6, ... whenever the mirror is ahead of the host. So they are
# unpacked into a folder instead. Runtime closure: libc6, libgcc-s1, libstdc++6, libgomp1 make
# the sysroot a complete guest root for qemu (-L); the cross compiler links against its own
# copies (/usr/aarch64-linux-gnu). nlohmann-json and CLI11 are arch: all (headers, CMake files).
ARM64_DEBS=(
  libdnnl-dev:arm64 libdnnl2:arm64
  libprotobuf-dev:arm64 libprotobuf32:arm64 libprotobuf-lite32:arm64
  libopenblas-dev:arm64 libopenblas-pthread-dev:arm64 libopenblas0-pthread:arm64 libopenblas0:arm64
  libgfortran5:arm64
  libgtest-dev:arm64 libssl-dev:arm64 libssl3:arm64 zlib1g-dev:arm64 zlib1g:arm64
  libonnx-dev:arm64
  libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 libgomp1:arm64
  nlohmann-json3-dev libcli11-dev
)
want="$(printf '%s\n' "${ARM64_DEBS[@]}")"
if [ ! -f "$SYSROOT/.debs" ] || [ "$(cat "$SYSROOT/.debs")" != "$want" ]; then
  step "arm64 sysroot from ${#ARM64_DEBS[@]} .debs"
  rm -rf "$SYSROOT" "$BUILD/debs"
  mkdir -p "$SYSROOT" "$BUILD/debs"
  (cd "$BUILD/debs" && apt-get download -qq -o APT::Sandbox::User=root "${ARM64_DEBS[@]}")
  for deb in "$BUILD"/debs/*.deb; do dpkg -x "$deb" "$SYSROOT"; done
  # What the packages' maintainer scripts would do: OpenBLAS's update-alternatives links
  # (libopenblas.so, cblas.h in the triplet folders), and absolute symlinks made relative so
  # they point into the sysroot, not at the host.
  A=aarch64-linux-gnu
  for f in "$SYSROOT/usr/include/$A/openblas-pthread/"*.h; do ln -sf "openblas-pthread/${f##*/}" "$SYSROOT/usr/include/$A/"; done
  for f in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3; do ln -sf "openblas-pthread/$f" "$SYSROOT/usr/lib/$A/$f"; done
  while IFS= read -r link; do
    target="$(readlink "$link")"
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$SYSROOT$target")" "$link"
  done < <(find "$SYSROOT" -type l -lname '/*')
  echo "$want" >"$SYSROOT/.debs"
  ls "$BUILD"/debs/*.deb | sed 's|.*/||' >"$SYSROOT/.versions"
  rm -rf "$BUILD/debs"
fi

# --- 3. cross build ------------------------------------------------------------------------
step "configure + build (aarch64-linux-gnu, -j$JOBS)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/aarch64-linux-gnu.cmake" -DLOCKSTEP_ARM64_SYSROOT="$SYSROOT" \
  -DLOCKSTEP_CUDA=OFF -DLOCKSTEP_VULKAN=OFF -DLOCKSTEP_PYTHON=OFF -DONNX_PROTO_SOURCE="$SYSROOT/usr/include/onnx/onnx.proto" >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target lockstep lockstep_tests
step_end

# --- 4. tests under qemu -------------------------------------------------------------------
step "CPU tests under qemu-aarch64-static (QEMU_CPU=$QEMU_CPU)"
# ctest starts each test through the emulator (cmake/aarch64-linux-gnu.cmake), and the tests
# start the CLI through it too (LOCKSTEP_CLI, tests/CMakeLists.txt). These two serve everything
# else: a guest process that starts an arm64 binary itself (binfmt_misc), and a by-hand run of
# build-arm64/lockstep.
export QEMU_LD_PREFIX="$SYSROOT"
[ -x .venv/bin/python3 ] && export PATH="$ROOT/.venv/bin:$PATH"   # onnx, onnxruntime (scripts/setup.sh)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
# Under emulation a spinning OpenMP worker burns what the other test process needs (docs/cpu.md,
# "Known weak spots"); sleeping waits change no result.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"

# Not run here (docs/cpu.md, "arm64"). Every CPU kernel family and the ONNX node conformance
# suite run; left out are the slowest model-level and tool sweeps: they exercise the float64
# reference interpreter and the bisect/reduce/report tools over whole models, portable code the
# x86 CI runs in full, and take minutes each under qemu. The CPU backend's own model checks
# (CpuSharedModels, CpuLayout, CpuFastPaths, SeedFlow, Determinism) stay. Times: one test under
# qemu on this 2-core host, quiet (q) or with another build running (l).
SLOW=(
  '^Models/BisectModelTest\.'                         # bisection sweeps over the shared models: > 600 s each (l)
  '^BisectPasses\.(PlantedFaultyApplicationIsNamedExactly|CleanPipelineAgrees)$'   # > 600 s, 53 s (l)
  '^ExternalBisect\.(NamesEachPlantedNodeOfTheDefaultInProcess|RunnerAsReferenceSideAndJson|CleanCpuRunnerAgreesInOneRun)$'  # > 600, 292, 88 s (l)
  '^Bisect\.(StaleValueFromAnotherRunIsLocal|BadArgumentsAreClearErrors|ReportsCarryEveryRow)$'  # 61, 32, 46 s (q)
  '^CliDiffTest\.BisectCleanCpuAgreesInEveryFormat$'  # 88 s (q)
  '^Reduce\.(WritesTheDivergentNodeAloneAndItStillDiverges|SyntheticWeightsLeaveNoOriginalBytesAndStillDiverge)$'  # 89, 80 s (l)
  '^ReportHtml\.'                                     # a bisection rendered in the host's chromium: 151 s (l)
  '^SharedModels/PreserveReference\.'                 # the reference after every pass, per model: 64 to > 600 s (l)
  '^Models/ReferenceSharedModels\..*"vits_(seed_dec_T256|low_dec_T128)"$'  # float64 reference on the decoders: 133, 174 s (l)
  '^Models/OrtBisect\.'                               # bisection against ONNX Runtime over the shared models: minutes each
  '^SeedFlow\.ReferenceOutputIsFiniteAndDeterministic$'                  # float64 reference, twice: 30 s (q)
  '^Backends/Concurrency\.ConcurrentRunsGiveSequentialBits/"reference"$'  # 66 s (l); the cpu case runs
  '^PiperVoice\.(SentencesMatchOnnxRuntimeLengthAndReferenceValues|SeededNoiseIsTheSameOnEveryBackendAndRun)$'  # the voice on the float64 reference (16 s native); the cpu voice tests run
  '^Voices/PiperArch\.'                              # float64 reference + cpu on six small voices: 22 s native
  '^PiperStream\.WindowsConcatenateToTheWholeSentenceOnCpu$'  # the voice whole and streamed, six times: 6 s native, 376 s here (passed: bit-exact on NEON too)
  '^PersistentRunner\.(Determinism|InProcessBisect)'  # runner-protocol v2 sweeps: portable code, x86 CI runs them
  '^PiperBatch\.EveryUtteranceGetsItsBatchOneBits'  # 24 utterances batched and alone (6 s native) and the reference (3 s); the batcher's error test runs here
  '^CliTest\.RaggedRunsEachRowOfAVoiceAsItsOwnUtterance$'  # four CLI runs of the voice (4 s native)
)
EXCLUDE="$(IFS='|'; echo "${SLOW[*]}")"
# Tests whose lockstep process starts an arm64 binary itself (check's and determinism's fresh
# worker processes, a CLI killed mid-run): the kernel runs that through qemu only with a
# binfmt_misc entry for aarch64 (Debian registers one when qemu-user-static is installed on a
# machine with systemd; containers usually have none). Without one they are left out, by name.
SPAWN='^CliTest\.Check|^CliDiffTest\.DeterminismCleanCpuPasses$|^RobustOutput\.SigkillMidRunLeavesNoPartialFile$'
if "$BUILD/lockstep" --help >/dev/null 2>&1; then
  echo "test-arm64: binfmt_misc runs arm64 binaries: the self-spawning CLI tests run too"
else
  echo "test-arm64: NOTE no binfmt_misc entry for aarch64: skipping the tests that start arm64 processes" \
       "from inside the guest ($SPAWN)"
  EXCLUDE="$EXCLUDE|$SPAWN"
fi
EXCLUDE="${LOCKSTEP_ARM64_EXCLUDE:-$EXCLUDE}"
echo "test-arm64: ctest -L cpu -E '$EXCLUDE'"
# The ONNX node conformance suite runs in one emulated process (scripts/run-conformance.sh): a
# qemu start per case would cost minutes.
step_begin "arm64: CPU ctest under qemu (documented subset)"
seed_ctest_costs "$BUILD"
ctest --test-dir "$BUILD" -L cpu -E "$EXCLUDE|^Node/OnnxNodeTest\\." --output-on-failure -j "$JOBS" "$@" 2>&1 | tee "$out"
step_end "$(count_ctest "$out")"
step_begin "arm64: ONNX node conformance under qemu (one process)"
./scripts/run-conformance.sh qemu-aarch64-static -cpu "$QEMU_CPU" "$BUILD/tests/lockstep_tests" 2>&1 | tee "$out"
step_end "$(count_gtest "$out")"
step "done: arm64 build and CPU tests passed"
