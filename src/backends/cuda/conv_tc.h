// Strict-fp32 1-D Conv on tensor cores (3xTF32, conv_tc_kernel.h) for the shapes where it measured
// faster than cuDNN's FMA path and at least as accurate (bench/gpu/conv3xtf32_probe.cu).
#pragma once

#include <string>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

// True when `node` takes the tensor-core path. A ConvTranspose (strict fp32, 1-D, group 1, no
// dilation, kernel = J * stride with J in 2/3/5/7/11, N*T_out >= 65536 unless LOCKSTEP_CUDA_CONVT_TC
// is 1 (any size) or 0 (none)) runs as one conv of its stride phases. A Conv: strict fp32, or tf32 with at most 16 channels (weights rounded to TF32), 1-D, group 1, stride 1,
// constant finite weights, C_in % 8 == 0 (any T_in), kernel 3/5/7/11, C_in >= 8 and C_out >= 1
// (>= 32 both with LOCKSTEP_CUDA_CONV_TC_SMALL=0), any N*T_out, LOCKSTEP_CUDA_CONV_TC not "0";
// LOCKSTEP_CUDA_CONV_TC_K1=1 adds kernel 1 (opt-in). Otherwise `why_not` (if given) says why.
bool conv_tc_eligible(const ir::Graph& graph, const ir::Node& node, Precision precision, std::string* why_not = nullptr);

// Records the node's convolution (bias fused) and its epilogue. Requires conv_tc_eligible. False
// (nothing recorded) when the tile's shared memory exceeds the device's: the caller takes cuDNN.
bool record_conv_tc(Context& ctx, int node_index, NodeProgram& program);

// Test hook: Conv nodes this process recorded on the tensor-core path.
int conv_tc_recorded_count();
// How many of those merge a WN gate conv's split ranges in a thread-block cluster (tests).
int gate_cluster_recorded_count();

}  // namespace lockstep::cuda
