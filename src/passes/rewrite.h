// Small graph edits shared by the passes.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace lockstep::passes {

// Replaces every read of `from` (node inputs, epilogue operands, graph outputs) by `to`.
void replace_uses(ir::Graph& graph, ir::ValueId from, ir::ValueId to);

// Erases the nodes whose flag is set, keeping the order of the others.
void erase_nodes(ir::Graph& graph, const std::vector<bool>& erase);

bool is_graph_output(const ir::Graph& graph, ir::ValueId id);

}  // namespace lockstep::passes
