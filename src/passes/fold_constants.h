// Constant folding: every node whose inputs (and epilogue operands) are all constant is evaluated
// by the reference and replaced by constant values (graph outputs stay outputs). One counted
// application per node; outputs over kFoldMaxBytes stay computed at run time.
// Tested in tests/passes/fold_constants_test.cpp.
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"

namespace lockstep::passes {

inline constexpr int64_t kFoldMaxBytes = int64_t{64} << 20;

void fold_constants(ir::Graph& graph, PassContext& ctx);

}  // namespace lockstep::passes
