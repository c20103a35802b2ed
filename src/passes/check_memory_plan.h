// The memory-plan checker (tests/passes/check_memory_plan_test.cpp).
#pragma once

#include "ir/graph.h"

namespace lockstep::passes {

// Recomputes liveness from the graph, independently of plan_memory, and proves that no two
// simultaneously live values share a byte and every stored value fits its slot. An alias
// (MemoryPlan.alias_of) must lie inside its value, which then counts as live over the alias's reads. Throws
// Error(Internal) naming both values of an overlap (or the one value that is misplaced).
void check_memory_plan(const ir::Graph& graph);

}  // namespace lockstep::passes
