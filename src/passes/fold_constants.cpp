#include "passes/fold_constants.h"

#include "passes/fold_support.h"

namespace lockstep::passes {

void fold_constants(ir::Graph& graph, PassContext& ctx) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (ir::Node& node : graph.nodes) {
    int64_t bytes = output_bytes(graph, node);
    bool foldable = all_inputs_constant(graph, node) && bytes >= 0 && bytes <= kFoldMaxBytes;
    if (foldable && ctx.should_apply("fold_constants", node.name)) {
      fold_node(graph, node);
      continue;
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
}

}  // namespace lockstep::passes
