// The float64 reference interpreter: straightforward loops, the executable specification of
// every op. Floating tensors are computed in double; integer and bool tensors keep their type.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::reference {

// Runs the whole graph (epilogues included). Inputs in graph-input order, any floating dtype;
// floating outputs come back as Float64. `tap` sees every node's outputs (after epilogue).
// `seed` is the run's seed (RunOptions::seed) for random ops without a `seed` attribute.
// `alter` (RunOptions::fault_for_testing) may change each node's outputs before anything reads
// them (the float32 floor of a model: bench/float32_floor.cpp rounds them).
std::vector<Tensor> evaluate(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                             const TapFn& tap = {}, uint64_t seed = 0, const FaultFn& alter = {});

// Evaluates one node (and its epilogue) on the given input values (kNoValue inputs are passed as
// undefined tensors). Used by constant folding. Floating results are Float64. Epilogue operands
// may follow the node's inputs (one per step, undefined for unary steps); steps without one
// read their operand's constant from `graph`.
std::vector<Tensor> evaluate_node(const ir::Graph& graph, const ir::Node& node,
                                  const std::vector<Tensor>& inputs, uint64_t seed = 0);

// Evaluates one node without an epilogue on its inputs as stored (no float64 widening): for ops
// that only move or select elements, whose bytes are the same in any dtype (constant folding
// at a new length: the relative-position tables, 1 MB each, were widened and narrowed twice).
std::vector<Tensor> evaluate_node_as_stored(const ir::Graph& graph, const ir::Node& node,
                                            const std::vector<Tensor>& inputs);

// The reference as a Backend ("reference").
const Backend& backend();

}  // namespace lockstep::reference
