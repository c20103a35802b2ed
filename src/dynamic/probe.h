// Which nodes can run now: shape inference that stops at data-dependent sizes instead of failing.
// The run-time shape stage (dynamic/executable.h) probes the not-yet-run part of a graph whose
// inputs and already-computed values have concrete shapes; the runnable nodes form the next
// segment, the blocked ones wait for values that segment computes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dynamic/predict.h"
#include "ir/graph.h"

namespace lockstep::dynamic {

enum class NodeState : uint8_t {
  Runnable,  // shapes known: compiled into the next segment
  Folded,    // all inputs constant: evaluated now, its outputs are constants of the graph
  Host,      // data-dependent output shape (NonZero) with every input known: runs between segments
  Blocked,   // needs a value (or a shape) that is not known yet
  Predicted, // a Host node whose result was predicted (dynamic/predict.h): a constant now, checked after
};

struct ProbeResult {
  std::vector<NodeState> states;  // per graph node
  // With `timed`: ms and node count per op of shape inference and folding (the trace's "probe by op").
  std::map<std::string, std::pair<double, int>> ms_by_op;
  bool any_blocked() const;
};

// Walks graph.nodes in order, giving each Runnable/Folded node's outputs their shapes and dtypes
// (ir::infer_node) and folding small all-constant nodes (shape arithmetic) so that their values
// reach the parameter inputs they feed. A node is Blocked when an input comes from a Blocked or
// Host node, or a parameter input (ir::is_parameter_input) is not constant. `known` marks the
// values whose shapes are already concrete (graph inputs, computed values, constants).
// An output over `max_value_bytes` (> 0) is Error(LimitExceeded) naming the node, value and size.
// With `predictions` (per graph node), a Host node that has one is Predicted instead: its outputs
// become the constants it would give on the predicted mask, and the nodes after it go on.
// Data moved out of constants folds up to `moved_max_bytes` (passes::foldable).
ProbeResult probe(ir::Graph& graph, std::vector<char> known, int64_t max_value_bytes, bool timed = false,
                  const std::vector<Prediction>* predictions = nullptr, int64_t moved_max_bytes = INT64_MAX);

}  // namespace lockstep::dynamic
