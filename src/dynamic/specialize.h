// One static graph for one call: a model with run-time shapes specialised to given inputs, for
// the tools that need a whole static graph (bisect, extract, reduce). The float64 reference runs
// the model once; every value whose contents decide a size (NonZero's result, a Range bound read
// from predicted durations, a Reshape's computed shape) becomes a constant with the reference's
// value, and the input shapes are bound. The tested side then follows the reference's discrete
// decisions, so the rest of the graph can still be compared node by node (docs/dynamic-shapes.md).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::dynamic {

struct Specialised {
  ir::Graph graph;
  std::vector<std::string> fixed;  // the values made constants, in graph order
};

Specialised specialise_to_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs, uint64_t seed = 0);

}  // namespace lockstep::dynamic
