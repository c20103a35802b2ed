// Shape inference: sets every node output's dtype and shape (ir::infer_node), folding nodes whose
// inputs are all constant (and Shape nodes of known shapes) so that shape subgraphs
// (Shape → Gather → Unsqueeze → Concat → Reshape) resolve to constant parameters.
// Declared shapes (value_info, graph outputs) must agree, else Error(ShapeMismatch) naming the
// node. Mandatory, not a counted application. Tested in tests/passes/infer_shapes_test.cpp.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace lockstep::passes {

void infer_shapes(ir::Graph& graph, int64_t fold_moved_max_bytes = INT64_MAX);

}  // namespace lockstep::passes
