// The 1-D Conv that the hand-written CPU conv kernels take (conv_narrow.h, conv_winograd.h):
// stride 1, group 1, explicit pads, constant weights and bias, and exactly the output length
// the pads give (no floor of a stride to reason about).
#pragma once

#include <cstdint>
#include <optional>

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

struct PlainConv1d {
  int64_t n = 1, ci = 1, co = 1, w_in = 1, w_out = 1, k = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

// `node`'s geometry when it is such a Conv; nullopt otherwise (the caller keeps oneDNN).
std::optional<PlainConv1d> plain_conv1d(const CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
