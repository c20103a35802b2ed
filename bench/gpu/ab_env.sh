#!/usr/bin/env bash
# A/B of one environment switch on a cached call: `lockstep_bench MODEL --backend cuda` on the
# inputs given, alternating VAR=A and VAR=B for ROUNDS rounds, one process each; prints the median
# ms, the kernels' ms summed over the segments and the error against REF if given.
# Usage: ab_env.sh BIN MODEL VAR A B IN1 IN2 IN3   (ROUNDS=2, RUNS=20)
set -uo pipefail
B=$1 M=$2 VAR=$3 A=$4 Bv=$5; shift 5
for r in $(seq 1 ${ROUNDS:-2}); do
  for v in "$A" "$Bv"; do
    env "$VAR=$v" $B/lockstep_bench $M --backend cuda --runs ${RUNS:-20} --warmup 3 --seed 7 --inputs "$@" 2>/dev/null | tail -1 |
      VAR="$VAR=$v" python3 -c "import json,os,sys; r=json.loads(sys.stdin.read()); print(f\"{os.environ['VAR']}: cached {r['median_ms']:.2f} ms (min {r['min_ms']:.2f}), kernels {r.get('segments_device_ms', 0):.2f} ms, segments {r.get('segments')}, first {r['first_run_ms']:.1f} ms\")"
  done
done
