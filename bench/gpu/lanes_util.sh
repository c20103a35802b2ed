#!/usr/bin/env bash
# Is a cuda batch's throughput bound by the device or by the host? Runs `lockstep_bench --ragged` on
# MODEL's rows (the batch_gpu.py rows in WORK) with LANES lanes and many timed passes while
# nvidia-smi samples the device's utilization (the share of time some kernel runs) every 50 ms;
# prints the bench's clips/s and the samples' median and 90th percentile over the run.
# Usage: lanes_util.sh BIN WORK MODEL "1 8 12"
set -uo pipefail
B=$1 W=$2 M=$3
for L in $4; do
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 50 > /tmp/util_$L.txt &
  S=$!
  r=$($B/lockstep_bench $M --backend cuda --ragged --batch-size 64 --lanes $L --runs ${RUNS:-40} --warmup 2 --seed 7 \
      --inputs $W/input.npy $W/input_lengths.npy $W/scales.npy 2>/dev/null | tail -1)
  kill $S; wait $S 2>/dev/null
  python3 - "$L" "$r" /tmp/util_$L.txt <<'PY'
import json, sys
lanes, r, f = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
u = sorted(int(x) for x in open(f).read().split() if x.strip().isdigit())
busy = [x for x in u if x > 0]  # the run's samples, not the process start
q = lambda p: busy[min(len(busy) - 1, int(p * len(busy)))] if busy else 0
print(f"lanes {lanes}: {r['clips_per_s']:.1f} clips/s (pass {r['median_ms']:.1f} ms, first pass {r['first_pass_ms']:.0f} ms); "
      f"utilization samples {len(u)}, busy {len(busy)}: median {q(0.5)}%, p90 {q(0.9)}%, max {max(u) if u else 0}%")
PY
done
