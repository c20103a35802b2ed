#include "passes/eliminate_dead_code.h"

#include "passes/rewrite.h"

namespace lockstep::passes {

void eliminate_dead_code(ir::Graph& graph, PassContext& ctx) {
  std::vector<bool> needed(graph.values.size(), false);
  for (ir::ValueId id : graph.outputs) needed[id] = true;
  std::vector<bool> erase(graph.nodes.size(), false);
  // Backwards, so a node's readers are decided before the node; a refused removal keeps the
  // node alive and with it everything it reads.
  for (size_t n = graph.nodes.size(); n-- > 0;) {
    const ir::Node& node = graph.nodes[n];
    bool live = false;
    for (ir::ValueId id : node.outputs) live = live || (id != ir::kNoValue && needed[id]);
    if (!live && ctx.should_apply("eliminate_dead_code",
                                  std::string("remove unused ") + ir::op_name(node.op) + " '" + node.name + "'")) {
      erase[n] = true;
      continue;
    }
    for (ir::ValueId id : node.inputs)
      if (id != ir::kNoValue) needed[id] = true;
    for (const auto& step : node.epilogue)
      if (step.operand != ir::kNoValue) needed[step.operand] = true;
  }
  erase_nodes(graph, erase);
}

}  // namespace lockstep::passes
