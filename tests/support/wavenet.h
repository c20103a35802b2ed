// A VITS-flow WaveNet layer as the tests build it: conv_in (k taps, h -> 2h) feeds the gate
// tanh(y[:, :h]) * sigmoid(y[:, h:]); the 1x1 res/skip conv (h -> 2h) feeds the residual
// x_new = (x + rs[:, :h]) * mask and the skip sum out = s + rs[:, h:]. After the compile pipeline
// the gate's Mul sits in the Sigmoid's epilogue and the mask Mul in the residual Add's.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace lockstep::test {

struct WnLayerOptions {
  int64_t n = 1, h = 64, t = 1024, k = 5;
  bool tanh_is_output = false;  // the gate's tanh value is also a graph output
  bool skip_is_output = false;  // the skip slice rs[:, h:] is also a graph output
  bool late_operand = false;    // the skip sum adds relu(s), computed after the res/skip conv
};

// Inputs x [n,h,t], mask [1,1,t], s [n,h,t]; outputs x_new, out (then the extra outputs asked for).
// Constants carry their dtype; the graph is unplanned.
ir::Graph wn_layer(const WnLayerOptions& o);

}  // namespace lockstep::test
