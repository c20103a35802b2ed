// Liveness-based memory planning in one arena (tests/passes/plan_memory_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace lockstep::passes {

// Bytes a value takes in the arena: numel x (4 floating, 8 int64, 4 int32, 1 bool).
int64_t planned_value_bytes(const ir::Value& value);

// A value's live range stretched past what the graph says: from node step `first` and/or up to
// step `last` (-1: unchanged). A backend that runs some nodes' work early (the CUDA executor's
// absorbed consumers) re-plans with them, so the early writes never land on bytes still in use.
struct LiveExtension {
  ir::ValueId value = ir::kNoValue;
  int first = -1, last = -1;
};

// Sets graph.plan: every non-constant value that is a graph input or produced by a node gets a
// 64-byte aligned offset; values whose live ranges (inclusive node steps; graph inputs from the
// start, graph outputs to the end, epilogue operands count as reads; then `extensions`) intersect
// never overlap, so a node's outputs never alias its inputs. Greedy by size, lowest fitting offset.
// Records lower_bound_bytes, the largest total live at one step. Shapes must be known.
// Throws Error(LimitExceeded) when max_memory_bytes > 0 and the arena is larger.
void plan_memory(ir::Graph& graph, int64_t max_memory_bytes = 0, const std::vector<LiveExtension>& extensions = {});

}  // namespace lockstep::passes
