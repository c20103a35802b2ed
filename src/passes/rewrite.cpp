#include "passes/rewrite.h"

#include <algorithm>

namespace lockstep::passes {

void replace_uses(ir::Graph& graph, ir::ValueId from, ir::ValueId to) {
  for (auto& node : graph.nodes) {
    for (auto& id : node.inputs)
      if (id == from) id = to;
    for (auto& step : node.epilogue)
      if (step.operand == from) step.operand = to;
  }
  for (auto& id : graph.outputs)
    if (id == from) id = to;
}

void erase_nodes(ir::Graph& graph, const std::vector<bool>& erase) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (!erase[n]) kept.push_back(std::move(graph.nodes[n]));
  graph.nodes = std::move(kept);
}

bool is_graph_output(const ir::Graph& graph, ir::ValueId id) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), id) != graph.outputs.end();
}

}  // namespace lockstep::passes
