// Convolution geometry from an ONNX node (pads resolved, oneDNN's conventions), and the 1-D Conv
// that the hand-written CPU conv kernels take (conv_narrow.h, conv_winograd.h):
// stride 1, group 1, explicit pads, constant weights and bias, and exactly the output length
// the pads give (no floor of a stride to reason about).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

using Dims = std::vector<int64_t>;

// Spatial geometry of a Conv or ConvTranspose, as oneDNN takes it: dilations count from 0, and
// the end pads give exactly the declared output size.
struct ConvGeometry {
  int64_t spatial = 0, group = 1;
  Dims kernel, strides, dilations, pad_begin, pad_end;
  Dims extra;  // ConvTranspose: output positions past the full result (output_padding)
};

// Throws Error naming the node for ranks or attributes it cannot take.
ConvGeometry conv_geometry(const ir::Graph& graph, const ir::Node& node, bool transposed);

struct PlainConv1d {
  int64_t n = 1, ci = 1, co = 1, w_in = 1, w_out = 1, k = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

// `node`'s geometry when it is such a Conv; nullopt otherwise (the caller keeps oneDNN).
std::optional<PlainConv1d> plain_conv1d(const CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
