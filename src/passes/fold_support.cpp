#include "passes/fold_support.h"

#include "reference/evaluate.h"

namespace lockstep::passes {

bool all_inputs_constant(const ir::Graph& graph, const ir::Node& node) {
  if (ir::is_random(node.op)) return false;  // noise depends on the run's seed: never folded
  bool any = false;
  for (ir::ValueId v : node.inputs) {
    if (v == ir::kNoValue) continue;
    if (!graph.is_constant(v)) return false;
    any = true;
  }
  for (const auto& step : node.epilogue)
    if (step.operand != ir::kNoValue && !graph.is_constant(step.operand)) return false;
  return any;
}

int64_t output_bytes(const ir::Graph& graph, const ir::Node& node) {
  int64_t total = 0;
  for (ir::ValueId v : node.outputs) {
    if (v == ir::kNoValue) continue;
    const ir::Value& value = graph.value(v);
    if (!value.shape_known()) return -1;
    total += num_elements(value.shape) * static_cast<int64_t>(dtype_size(value.dtype));
  }
  return total;
}

void fold_node(ir::Graph& graph, const ir::Node& node) {
  std::vector<Tensor> inputs;
  for (ir::ValueId v : node.inputs)
    inputs.push_back(v == ir::kNoValue ? Tensor{} : graph.value(v).constant);
  std::vector<Tensor> outputs = reference::evaluate_node(graph, node, inputs);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] == ir::kNoValue) continue;
    ir::Value& value = graph.value(node.outputs[o]);
    Tensor& t = outputs[o];
    value.constant = t.dtype() == value.dtype ? t : t.to(value.dtype);
    value.shape = t.shape();
  }
}

}  // namespace lockstep::passes
