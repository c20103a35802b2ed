// 1-D convolutions accumulated in float64 and rounded to float32 once (Options::f64_accumulate):
// for the parts of a model whose float32 errors the rest amplifies (a Piper voice's text
// encoder, docs/accuracy.md). Plain 1-D convs only (plain_conv1d); others keep float32.
#pragma once

#include "backends/cpu/kernel.h"

namespace lockstep::cpu {

// Null when `node` is not to accumulate in float64 or is no plain 1-D conv.
KernelPtr make_f64_conv(CompileContext& ctx, const ir::Node& node);

}  // namespace lockstep::cpu
