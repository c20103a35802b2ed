#!/usr/bin/env bash
# One call on the GPU machine: GPU tests (incl. the ONNX node suite on cuda), `lockstep check`
# (8 fresh processes) and `compare`, then the benchmark against PyTorch. Run from the repo root
# with the packaged folder (bench/gpu/package.sh) carried as build-gpurun/. Logs go to $OUT.
# STEPS (default "tests check bench") picks parts; also "fast" (check/compare in the reduced-precision
# modes), "probe" (the 3xTF32 convolution probe, build-gpurun/conv3xtf32_probe when packed) and
# "scaling" (time against frames and batch, bench/gpu/scaling_gpu.py), "profile" (per-kernel GPU
# time in graph replay, bench/gpu/profile_gpu.py) and "ncu" (Nsight Compute on one preset after "profile").
set -uo pipefail
PKG=${PKG:-build-gpurun}
OUT=${OUT:-/tmp/gpu_out}
STEPS=${STEPS:-tests check bench}
mkdir -p "$OUT" /tmp/gpurun
tar -C /tmp/gpurun -xJf "$PKG/libs.tar.xz"
tar -C /tmp/gpurun -xJf "$PKG/data.tar.xz"
# The low decoder, carried by an earlier call (package.sh LOW_DEC=1) when it is wanted.
[ -f /tmp/build-gpulowdec/lowdec.tar.xz ] && tar -C /tmp/gpurun/models -xJf /tmp/build-gpulowdec/lowdec.tar.xz
# The binaries, xz-packed by package.sh (the carried folder stays under the 64 MiB limit).
BIN=$PKG
if [ -f "$PKG/bin.tar.xz" ]; then tar -C /tmp/gpurun -xJf "$PKG/bin.tar.xz" && BIN=/tmp/gpurun/bin; fi
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
export LOCKSTEP_MODELS_DIR=/tmp/gpurun/models LOCKSTEP_ONNX_NODE_DIR=/tmp/gpurun/node
export LOCKSTEP_SKIP_LIST=$PWD/tests/conformance/skip_list.txt PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
M=/tmp/gpurun/models
# tests/support/fixtures.cpp reads <source dir>/../shared/models (compiled in as /work/shared/models),
# not LOCKSTEP_MODELS_DIR: point it at the packed models when that folder is absent here.
[ -e /work/shared/models ] || { mkdir -p /work/shared && ln -s "$M" /work/shared/models; }
for step in $STEPS; do case $step in
tests)
  timeout ${TESTS_TIMEOUT:-300} "$BIN/lockstep_gpu_tests" 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "^\[(  PASSED|  FAILED|  SKIPPED) |^\[cuda\]|ONNX node|FAILED|tests ran" ;;
check)
  { echo "## lockstep check --fresh 8 (embedded default)"; timeout 240 "$BIN/lockstep" check --fresh 8
    echo "## lockstep check vits_seed_dec_T256 --fresh 8"
    timeout 240 "$BIN/lockstep" check $M/vits_seed_dec_T256.onnx --inputs $M/vits_seed_dec_T256.z_p.npy $M/vits_seed_dec_T256.y_mask.npy --fresh 8
    echo "## lockstep compare vits_seed_174 (default sides), then --ref cpu --test cuda"
    timeout 120 "$BIN/lockstep" compare $M/vits_seed_174.onnx --inputs $M/vits_seed_174.z_p.npy $M/vits_seed_174.y_mask.npy
    timeout 120 "$BIN/lockstep" compare $M/vits_seed_174.onnx --ref cpu --test cuda --inputs $M/vits_seed_174.z_p.npy $M/vits_seed_174.y_mask.npy
  } 2>&1 | tee "$OUT/check.log" ;;
fast)
  { for prec in tf32 fp16 bf16; do
      echo "## lockstep check vits_seed_dec_T256 --fresh 2 --precision $prec"
      timeout 120 "$BIN/lockstep" check $M/vits_seed_dec_T256.onnx --inputs $M/vits_seed_dec_T256.z_p.npy $M/vits_seed_dec_T256.y_mask.npy --fresh 2 --precision $prec
      echo "## lockstep compare vits_seed_174 --precision $prec"
      timeout 60 "$BIN/lockstep" compare $M/vits_seed_174.onnx --inputs $M/vits_seed_174.z_p.npy $M/vits_seed_174.y_mask.npy --precision $prec
    done; } 2>&1 | tee "$OUT/fast.log" | grep -E "^##|PASS|FAIL|precision|AGREE|DIVERGE|SHA-256|rror" ;;
tools)
  { echo "## lockstep bisect --ref reference --test cuda (embedded default)"; timeout 120 "$BIN/lockstep" bisect --ref reference --test cuda --format markdown | tail -8
    echo "## lockstep determinism vits_seed_dec_T256 --backend cuda --runs 8"
    timeout 240 "$BIN/lockstep" determinism $M/vits_seed_dec_T256.onnx --backend cuda --runs 8 --inputs $M/vits_seed_dec_T256.z_p.npy $M/vits_seed_dec_T256.y_mask.npy | tail -14
  } 2>&1 | tee "$OUT/tools.log" ;;
cpu)
  # lockstep CPU vs ONNX Runtime CPU on this machine's cores, side by side (bench/run_cpu.py);
  # CPU_ARGS adds flags, e.g. "--default --variant avx2=LOCKSTEP_CPU_ISA=avx2".
  for t in ${CPU_THREADS:-16 2}; do
    timeout 300 python3 bench/run_cpu.py --threads $t --rounds 3 --build "$BIN" --models $M --ort-run /tmp/gpurun/tools/ort_run.py ${CPU_ARGS:-}
  done 2>&1 | tee "$OUT/cpu.log" ;;
scaling)
  # Issue 6 scaling: lockstep cuda vs eager fp32 over frames 128..8192 (batch 1) and batch 1,4,16 (1024
  # frames), presets seed,low,ljs; scaling.jsonl/.md in $OUT. Stops starting configs after SCALING_BUDGET_S;
  # SCALING_ARGS adds flags (a dry run on a machine without a GPU: "--device cpu --backend cpu --frames 128").
  timeout ${SCALING_TIMEOUT:-270} python3 bench/gpu/scaling_gpu.py --bin "$BIN" --tools /tmp/gpurun/tools \
    --work /tmp/gpurun/scaling --out "$OUT" --budget-s ${SCALING_BUDGET_S:-200} ${SCALING_ARGS:-} 2>&1 \
    | grep --line-buffered -v -i "deprecat\|torch.onnx.export\|warn" | tee "$OUT/scaling.log" ;;
profile)
  # Per-kernel GPU time in graph replay for each preset and VARIANTS (bench/gpu/profile_gpu.py).
  timeout ${PROFILE_TIMEOUT:-300} python3 bench/gpu/profile_gpu.py --bin "$BIN" --tools /tmp/gpurun/tools \
    --work /tmp/gpurun/profile --out "$OUT/profile.log" 2>&1 | grep --line-buffered "^===" | tee "$OUT/profile_summary.log" ;;
ncu)
  # Nsight Compute on one preset's kernels in graph replay (NCU_PRESET low, NCU_FRAMES 1024, NCU_KERNEL a
  # regex, NCU_COUNT launches): run after the profile step, whose export it uses.
  S=/tmp/gpurun/profile/${NCU_PRESET:-low}_T${NCU_FRAMES:-1024}
  timeout ${NCU_TIMEOUT:-240} /usr/local/cuda/bin/ncu --graph-profiling node -k regex:"${NCU_KERNEL:-conv1d_3xtf32}" \
    --launch-count ${NCU_COUNT:-40} --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section LaunchStats \
    "$BIN/lockstep_bench" $S.onnx --backend cuda --inputs $S.z_p.npy $S.y_mask.npy --runs 1 --warmup 0 > "$OUT/ncu.txt" 2>&1
  grep -E "^  [a-z_0-9]+.*\(|Duration|Warp Cycles Per Issued|Issue Slots Busy|Achieved Occupancy|Memory Throughput|Compute \(SM\)" "$OUT/ncu.txt" | head -80 ;;
cputests)
  # The CPU test suite on this machine's AVX-512 cores, then capped to AVX2 (LOCKSTEP_CPU_ISA caps
  # lockstep's kernels and oneDNN): issue 20's "passes on an AVX2-only and an AVX-512 host". Needs
  # lockstep_tests packed (CPU_TESTS=1 bash bench/gpu/package.sh). The tests find the CLI and the
  # sources at the paths compiled in (/work/main, /work/main/build): linked here when absent.
  [ -e /work/main ] || ln -s "$PWD" /work/main
  [ -e /work/main/build/lockstep ] || { mkdir -p /work/main/build && ln -sf "$BIN"/* /work/main/build/; }
  for cap in host avx2; do
    env=(); [ $cap = avx2 ] && env=(LOCKSTEP_CPU_ISA=avx2)
    for i in $(seq 0 7); do
      env "${env[@]}" GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i OMP_NUM_THREADS=2 timeout ${CPU_TESTS_TIMEOUT:-420} \
        "$BIN/lockstep_tests" --gtest_brief=1 > /tmp/gpurun/cpu_tests_$cap.$i.log 2>&1 &
    done; wait
    cat /tmp/gpurun/cpu_tests_$cap.*.log > "$OUT/cpu_tests_$cap.log"
    echo "## CPU tests, ISA $cap: $(grep -h "PASSED" /tmp/gpurun/cpu_tests_$cap.*.log | awk '{s+=$4} END {print s}') passed," \
         "$(grep -h "tests, listed below" /tmp/gpurun/cpu_tests_$cap.*.log | awk '{s+=$3} END {print s+0}') failed," \
         "$(grep -h "SKIPPED \]" /tmp/gpurun/cpu_tests_$cap.*.log | grep -c "tests\?," ) shards with skips"
    grep -h "^\[  FAILED  \]\|SKIPPED \] cap\|NOTE" /tmp/gpurun/cpu_tests_$cap.*.log | sort | uniq | head -30
  done 2>&1 | tee "$OUT/cpu_tests.log" ;;
vulkan)
  # Issue 25 on NVIDIA's Vulkan driver: the loader travels as .gl/*.deb (docs/vulkan.md says how to
  # fetch it; carry .gl), the driver's ICD is the machine's. `lockstep check` lists the device; the
  # Vulkan tests of lockstep_tests (CPU_TESTS=1 packs them) run on it; then vulkan beside cuda.
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  [ -n "$(ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* 2>/dev/null)" ] ||
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  # The device-selection test starts the CLI at the path compiled in (/work/main/build/lockstep).
  [ -e /work/main ] || ln -s "$PWD" /work/main
  [ -e /work/main/build/lockstep ] || { mkdir -p /work/main/build && ln -sf "$BIN"/* /work/main/build/; }
  { echo "## lockstep check (embedded default)"; timeout 120 "$BIN/lockstep" check --fresh 2
    echo "## Vulkan tests on this machine's device"
    LOCKSTEP_MODELS_DIR=$M LOCKSTEP_ONNX_NODE_DATA_DIR=/tmp/gpurun/node timeout ${VK_TESTS_TIMEOUT:-200} \
      "$BIN/lockstep_tests" --gtest_filter="${VK_FILTER:-Vulkan*:BisectVulkan*}" 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|vulkan|node suite|pass|refused|FAILED" | head -80
    [ "${VK_BENCH:-1}" = 1 ] && echo "## vulkan beside cuda" && timeout ${VK_BENCH_TIMEOUT:-300} python3 bench/gpu/bench_vulkan.py --bin "$BIN" --tools /tmp/gpurun/tools \
      --work /tmp/gpurun/vulkan 2>&1 | grep --line-buffered -v -i "deprecat\|torch.onnx.export\|warn"
  } 2>&1 | tee "$OUT/vulkan.log" ;;
piper)
  # Issue 22: Piper's own PyTorch model (medium architecture, seeded weights; piper/train/vits carried
  # in $PKG/piper by package.sh PIPER_SRC=...) eager and torch.compile beside lockstep cuda.
  timeout ${PIPER_TIMEOUT:-400} python3 bench/gpu/bench_piper_gpu.py --bin "$BIN" --piper-src "$PKG/piper" \
    --work /tmp/gpurun/piper 2>&1 | grep --line-buffered -v -i "deprecat\|torch.onnx.export\|warn" | tee "$OUT/piper.log"
  # Where a new length's first call goes: the stage's trace (probe, pipeline, cuda compile per segment)
  # of sentence TRACE_TO (default 1) after sentence TRACE_FROM (default 0).
  S=/tmp/gpurun/piper A=s${TRACE_FROM:-0} B=s${TRACE_TO:-1}
  [ -f $S/piper_medium.onnx ] && LOCKSTEP_TRACE_SHAPES=1 LOCKSTEP_CUDA_COMPILE_TIMES=1 timeout 60 "$BIN/lockstep_bench" $S/piper_medium.onnx --backend cuda \
    --runs 3 --warmup 0 --inputs $S/$B/input.npy $S/$B/input_lengths.npy $S/$B/scales.npy \
    --prime $S/$A/input.npy $S/$A/input_lengths.npy $S/$A/scales.npy > "$OUT/trace.log" 2>&1; tail -40 "$OUT/trace.log"
  # VOICE_PROFILE=1: per-kernel GPU time of each segment of sentence PROFILE_SENT (default s0, 1 s; graph replay).
  [ -f $S/piper_medium.onnx ] && [ "${VOICE_PROFILE:-0}" = 1 ] && LOCKSTEP_CUDA_PROFILE=1 timeout 60 "$BIN/lockstep_bench" \
    $S/piper_medium.onnx --backend cuda --runs 5 --warmup 1 --inputs $S/${PROFILE_SENT:-s0}/input.npy $S/${PROFILE_SENT:-s0}/input_lengths.npy $S/${PROFILE_SENT:-s0}/scales.npy \
    > "$OUT/voice_profile.log" 2>&1 && grep -E "^lockstep cuda profile|total|^  *[0-9.]+ ms" "$OUT/voice_profile.log" | head -60
  # CHURN calls of random lengths (5-200 phonemes) on that voice: resident host memory every tenth,
  # the segment cache at the end, GPU memory in use sampled by nvidia-smi meanwhile.
  S=/tmp/gpurun/piper
  if [ -f $S/piper_medium.onnx ] && [ "${CHURN:-1000}" -gt 0 ]; then
    (while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; done > $S/gpu_mem.txt) &
    MEMPID=$!
    timeout ${CHURN_TIMEOUT:-300} "$BIN/lockstep_bench" $S/piper_medium.onnx --backend cuda --runs 3 --warmup 0 \
      --inputs $S/s0/input.npy $S/s0/input_lengths.npy $S/s0/scales.npy --churn ${CHURN:-1000} 2>&1 | tee "$OUT/churn.log"
    kill $MEMPID 2>/dev/null
    echo "## GPU memory used (MiB), sampled each second: first $(head -1 $S/gpu_mem.txt), max $(sort -n $S/gpu_mem.txt | tail -1), last $(tail -1 $S/gpu_mem.txt), samples $(wc -l < $S/gpu_mem.txt)" | tee -a "$OUT/churn.log"
  fi ;;
probe)
  [ -x "$BIN/conv3xtf32_probe" ] && timeout 120 "$BIN/conv3xtf32_probe" 2>&1 | tee "$OUT/probe.log" ;;
bench)
  echo "## compile time and run time of the 174-node default (vits_seed_174) on cuda" | tee "$OUT/bench.log"
  timeout 60 "$BIN/lockstep_bench" $M/vits_seed_174.onnx --backend cuda --inputs $M/vits_seed_174.z_p.npy $M/vits_seed_174.y_mask.npy \
    --ref $M/vits_seed_174.ref64.npy --runs 50 2>&1 | tee -a "$OUT/bench.log"
  timeout 400 python3 bench/gpu/bench_gpu.py --bin "$BIN" --tools /tmp/gpurun/tools --work /tmp/gpurun/bench \
    --profile-log "$OUT/profile.log" 2>&1 | grep --line-buffered -v -i "deprecat\|torch.onnx.export" | tee -a "$OUT/bench.log" ;;
esac; done
