// Algebraic simplification (tests/passes/simplify_algebra_test.cpp).
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"

namespace lockstep::passes {

// Drops x+0, 0+x, x-0, x*1, 1*x, x/1 (constant all-zero / all-one operands), Identity, Slices
// that keep everything (step 1) and Reshapes to the same shape, when the result has exactly the
// kept input's shape and dtype (a broadcasting x+zeros[4,4] on x[4] stays). Graph output names
// never change: the kept value takes the output's name, or the node stays. One application per
// dropped node. Needs known shapes (after infer_shapes).
void simplify_algebra(ir::Graph& graph, PassContext& ctx);

}  // namespace lockstep::passes
