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

// A value planned inside another's bytes at `byte_offset` (a backend's dense channel view of a
// Slice or Split output): it takes no bytes of its own and keeps `of` live up to its own last
// read. Only a backend that drops the copy may plan one (the CPU executor and the reference never do).
struct Alias {
  ir::ValueId value = ir::kNoValue, of = ir::kNoValue;
  int64_t byte_offset = 0;
};

// What a backend changes in the graph's live ranges before planning.
struct PlanAdjustments {
  std::vector<LiveExtension> extensions;
  std::vector<Alias> aliases;
};

// Sets graph.plan: every non-constant value that is a graph input or produced by a node gets a
// 64-byte aligned offset; values whose live ranges (inclusive node steps; graph inputs from the
// start, graph outputs to the end, epilogue operands count as reads; then `extensions`) intersect
// never overlap, so a node's outputs never alias its inputs (`adjustments.aliases` aside). Best of
// four greedy placements. Records lower_bound_bytes, the largest total live at one step (aliases
// take none). Shapes must be known. Throws Error(LimitExceeded) when max_memory_bytes > 0 and the
// arena is larger, Error(Internal) for an alias outside its value or of an alias.
void plan_memory(ir::Graph& graph, int64_t max_memory_bytes = 0, const PlanAdjustments& adjustments = {});

}  // namespace lockstep::passes
