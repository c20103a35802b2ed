// The embedded default (DESIGN.md "The embedded default"): the seed-shaped VITS flow, reverse
// direction, cut at flow.0/enc/in_layers.1/Conv — 174 nodes, output [1,144,1024].
// Mirrors /work/shared/models/vits_seed_174.onnx node for node, with `flow.K/...` names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lockstep/tensor.h"

namespace lockstep::zoo {

inline constexpr int64_t kSeedFlowChannels = 128;
inline constexpr int64_t kSeedFlowHidden = 72;
inline constexpr int64_t kSeedFlowKernel = 5;
inline constexpr int64_t kSeedFlowLayers = 4;   // WaveNet layers per coupling
inline constexpr int64_t kSeedFlowFrames = 1024;
inline constexpr double kSeedFlowWeightStd = 0.1;
inline constexpr const char* kSeedFlowCut = "flow.0/enc/in_layers.1/Conv";

// Weights are i.i.d. N(0, 0.1), each parameter drawn from its own stream keyed by (seed, name).
// `frames` other than 1024 gives the same topology at another length (for A/B/A checks).
ir::Graph seed_flow_graph(uint64_t seed = 0, int64_t frames = kSeedFlowFrames);

// z_p[0,c,t] = 0.5·sin(2π(3c+t)/128) as float32 [1,128,frames]; y_mask = 1 [1,1,frames].
std::vector<Tensor> seed_flow_inputs(int64_t frames = kSeedFlowFrames);

// The bug report's anchor nodes, 1-based node indices: 49 (flow.6/post/Conv), 102, 155, 162,
// 164, 170, 171, 172, 173, 174.
std::vector<int> seed_flow_anchors();

// Writes the graph as an ONNX file (atomically).
void write_seed_flow_onnx(const std::string& path, uint64_t seed = 0);

}  // namespace lockstep::zoo
