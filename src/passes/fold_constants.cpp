#include "passes/fold_constants.h"

#include "passes/fold_support.h"
#include "passes/pipeline.h"

namespace lockstep::passes {

void fold_constants(ir::Graph& graph, PassContext& ctx) {
  std::vector<ir::Node> kept;
  kept.reserve(graph.nodes.size());
  for (ir::Node& node : graph.nodes) {
    if (foldable(graph, node, kFoldMaxBytes, ctx.options().fold_moved_max_bytes) && ctx.should_apply("fold_constants", node.name)) {
      fold_node(graph, node);
      continue;
    }
    kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
}

}  // namespace lockstep::passes
