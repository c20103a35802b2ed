// Shared by infer_shapes and fold_constants: evaluating an all-constant node into constants.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace lockstep::passes {

// True when every input and epilogue operand of `node` is a constant (and it has some input);
// never for random ops, whose values depend on the run's seed.
bool all_inputs_constant(const ir::Graph& graph, const ir::Node& node);
// Bytes of the node's outputs at their current (inferred) shapes and dtypes; -1 if unknown.
int64_t output_bytes(const ir::Graph& graph, const ir::Node& node);
// A ConstantOfShape from this size on is filled at run time, not folded: a fill kernel costs
// less than materialising the tensor at every compile (page faults) and copying it to the device
// (a voice's flows folded 24 zero tensors of ~0.5 MB at every new length: ~8 ms of probe).
inline constexpr int64_t kFillAtRunTimeBytes = int64_t{64} << 10;
// In a run-time shape segment, data moved out of constants (a Pad, Slice, Transpose, Concat,
// Expand, Split or Gather of them) from this size on is moved on the device at each run
// instead of folded on the host at each new length: the voice's relative-position tables (9 rows
// padded to 2L-1, sliced, transposed: ~0.4 MB each at 500 phonemes) cost ~6 ms of a 13 s
// sentence's probe and went to the device as constants. Exact either way: the bytes only move.
inline constexpr int64_t kMoveAtRunTimeBytes = int64_t{64} << 10;
// The element moves kMoveAtRunTimeBytes names (Pad, Slice, Transpose, Concat, Expand, Split, Gather).
bool moves_data(ir::Op op);
// all_inputs_constant, outputs of known size within `max_bytes` (a moves_data op's within
// `max_moved_bytes`), and not a large fill.
bool foldable(const ir::Graph& graph, const ir::Node& node, int64_t max_bytes, int64_t max_moved_bytes = INT64_MAX);
// Evaluates `node` with the reference and stores its outputs as constants of their values'
// dtypes (floating results are rounded back to the value's dtype).
void fold_node(ir::Graph& graph, const ir::Node& node);

}  // namespace lockstep::passes
