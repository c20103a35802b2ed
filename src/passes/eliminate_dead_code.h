// Dead-code elimination (tests/passes/eliminate_dead_code_test.cpp).
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"

namespace lockstep::passes {

// Removes nodes none of whose outputs is read (by an input or an epilogue operand) or is a graph
// output. One application per removed node. Values stay in graph.values (unused ones are inert).
void eliminate_dead_code(ir::Graph& graph, PassContext& ctx);

}  // namespace lockstep::passes
