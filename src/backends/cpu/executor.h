// The CPU Executable: one arena, one kernel per node, converted constants, shared workspace.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::cpu {

std::unique_ptr<Executable> make_executable(const ir::Graph& graph, const Options& options);

// The arena's address (tests check that it stays the same across runs); null if not a cpu one.
const void* arena_address(const Executable& executable);

// The arena's size in bytes: the memory plan's arena (aligned) plus one slot per value that a node
// or the graph refers to and the plan does not place (all of them without a plan); -1 if not a cpu one.
int64_t arena_bytes(const Executable& executable);

// Resolved hardware thread count for Options.threads (0 = all).
int resolve_threads(int threads);

}  // namespace lockstep::cpu
