// Polyphase ConvTranspose (conv_transpose.cpp): a 1-D strided ConvTranspose computed as one
// stride-1 oneDNN convolution with stride x Co output channels.
#pragma once

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// The polyphase kernel, or null when the node needs the general one (not 1-D, groups,
// dilation, auto_pad, output_padding, runtime weights, stride 1).
KernelPtr make_polyphase_conv_transpose(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
