// Narrow-output 1-D convolution (conv_narrow.cpp): <= 4 output channels from a channels-last
// input, as dot products over contiguous rows.
#pragma once

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// The narrow kernel, or null when the node needs the general one (input not channels-last,
// more output channels, groups, strides, auto_pad, runtime weights).
KernelPtr make_narrow_conv(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
