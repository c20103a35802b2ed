#!/usr/bin/env bash
# Nsight Compute on a few tensor-core conv launches (a flow WN layer and decoder convs): where the
# kernel's time goes. Run on the GPU machine from the repo root with build-gpurun/ carried; reports in $OUT.
set -u
PKG=build-gpurun
mkdir -p /tmp/gpurun && tar -C /tmp/gpurun -xJf $PKG/libs.tar.xz && tar -C /tmp/gpurun -xJf $PKG/data.tar.xz
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/usr/local/cuda/lib64:/tmp/gpurun/libs
NCU=/usr/local/cuda/bin/ncu
F=/tmp/gpurun/models/vits_seed_flow_T1024
D=/tmp/gpurun/models/vits_seed_dec_T256
for spec in "$F 1 1" "$D 2 6"; do
  set -- $spec
  echo "=== conv1d_3xtf32 launches $2..$(($2+$3-1)) in $(basename $1)"
  timeout 150 $NCU --graph-profiling node -k conv1d_3xtf32 --launch-skip $2 --launch-count $3 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
    $PKG/lockstep_bench $1.onnx --backend cuda --inputs $1.z_p.npy $1.y_mask.npy --runs 1 --warmup 0 > $OUT/ncu_$(basename $1)_$2.txt 2>&1
  grep -E "conv1d_3xtf32<|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Dynamic Shared|Grid Size|Block Size|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Executed Ipc A|L2 Hit|stall|Stall" $OUT/ncu_$(basename $1)_$2.txt | head -120
done
