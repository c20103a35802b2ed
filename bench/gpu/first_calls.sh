#!/usr/bin/env bash
# Issue 48 point 2 as a distribution: `lockstep_bench --first-calls N` on the joe voice, N phoneme
# counts from 10 up to sentences 3+4's 503 (about 0.3 to 13 s of audio) that the process has not met,
# each timed at its first call and then cached (one process per variant, so the host's jitter between
# processes stays out of each ratio). Variants alternate for ROUNDS rounds; each is NAME=BIN_DIR[:VAR=VALUE...].
# Prints, per variant, the ratio first/cached by length band (median, p10-p90) and the medians' ms.
# Usage: first_calls.sh old=/tmp/gpurun/binold new=/tmp/gpurun/bin "new_nodes=/tmp/gpurun/bin:LOCKSTEP_CUDA_EAGER_NODES=1"
# Needs the voice in /tmp/v and /tmp/firstcall's inputs (bench/gpu/first_call.sh makes them).
set -uo pipefail
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
V=/tmp/v/voice.onnx F=/tmp/firstcall OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
args() { echo "$F/$1.input.npy $F/$1.input_lengths.npy $F/$1.scales.npy"; }
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in $(seq 1 "${ROUNDS:-2}"); do
  for variant in "$@"; do
    name=${variant%%=*} rest=${variant#*=}
    bin=${rest%%:*} envs=(); [ "$rest" != "$bin" ] && IFS=: read -r -a envs <<< "${rest#*:}"
    env ${envs[@]+"${envs[@]}"} timeout 300 "$bin/lockstep_bench" $V --backend cuda --runs 5 --warmup 1 --f64-accumulate /enc_p/ /flow/ \
      --prime $(args prime) --inputs $(args 13s) --first-calls "${N:-40}" 2>/dev/null | tail -1 > "$OUT/first_calls_${name}_$r.json"
  done
done
python3 - "$OUT" "$@" <<'PY'
import glob, json, statistics, sys
out, variants = sys.argv[1], [v.split("=", 1)[0] for v in sys.argv[2:]]
bands = [("10-60 phonemes", 10, 60), ("61-200", 61, 200), ("201-503", 201, 503)]
for name in variants:
    rows = []
    for f in sorted(glob.glob(f"{out}/first_calls_{name}_*.json")):
        try:
            rows += json.load(open(f))["first_calls"]["per_length"]
        except Exception as e:
            print(f"{name}: {f}: {e}")
    line = [f"{name}: {len(rows)} first calls"]
    for label, lo, hi in bands:
        b = [r for r in rows if lo <= r["phonemes"] <= hi]
        if not b:
            continue
        q = sorted(r["first_ms"] / r["cached_ms"] for r in b)
        pick = lambda p: q[min(len(q) - 1, int(p * len(q)))]
        line.append(f"{label} (n={len(b)}): ratio {statistics.median(q):.2f} (p10 {pick(0.1):.2f}, p90 {pick(0.9):.2f}), "
                    f"first {statistics.median(r['first_ms'] for r in b):.1f} ms, cached {statistics.median(r['cached_ms'] for r in b):.2f} ms")
    print("\n  ".join(line))
PY
