#!/usr/bin/env bash
# A/B of environment settings on the Piper medium sentences that run_gpu.sh's piper step left in
# /tmp/gpurun/piper (same warm machine): per setting and sentence, lockstep_bench's cached median,
# its first call after another length, rel L2 against float64 and the segments' device time.
# Usage: bash bench/gpu/ab_piper.sh X=1 LOCKSTEP_CUDA_CONV_TC_MIN_STEPS=1 ...  (X=1: the defaults)
S=/tmp/gpurun/piper BIN=/tmp/gpurun/bin
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
f() { echo $S/$1/input.npy $S/$1/input_lengths.npy $S/$1/scales.npy; }
for v in "$@"; do
  for pair in "s0 s1" "s1 s2" "s2 s0" "s0 s2"; do
    set -- $pair
    r=$(env $v "$BIN/lockstep_bench" $S/piper_medium.onnx --backend cuda --runs ${RUNS:-20} --warmup 0 --inputs $(f $1) \
          --prime $(f $2) --ref $S/$1/ref64.npy 2>/tmp/ab_err.txt | tail -1)
    echo "$v $1 after $2: $(echo "$r" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("median %.2f ms, first %.1f ms, rel_l2 %.1e, device %.2f ms, to host %s" % (d["median_ms"], d["first_run_ms"], d.get("rel_l2",0), d.get("segments_device_ms",0), d.get("segments_to_host")))' 2>/dev/null || tail -2 /tmp/ab_err.txt)"
  done
done
