#include "dynamic/specialize.h"

#include "ir/op.h"
#include "reference/evaluate.h"

namespace lockstep::dynamic {

Specialised specialise_to_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs, uint64_t seed) {
  // The values to fix: NonZero results and every computed value read as a parameter.
  std::vector<char> wanted(graph.values.size(), 0);
  for (const ir::Node& node : graph.nodes) {
    if (ir::has_data_dependent_shape(node.op))
      for (ir::ValueId v : node.outputs)
        if (v != ir::kNoValue) wanted[static_cast<size_t>(v)] = 1;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ir::ValueId v = node.inputs[i];
      if (v != ir::kNoValue && ir::is_parameter_input(node.op, i) && !graph.is_constant(v))
        wanted[static_cast<size_t>(v)] = 1;
    }
  }
  std::vector<Tensor> captured(graph.values.size());
  reference::evaluate(
      graph, inputs,
      [&](const ir::Node& node, int o, const Tensor& value) {
        ir::ValueId v = node.outputs.at(static_cast<size_t>(o));
        if (v != ir::kNoValue && wanted[static_cast<size_t>(v)]) captured[static_cast<size_t>(v)] = value.clone();
      },
      seed);

  Specialised out{graph, {}};
  ir::Graph& g = out.graph;
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    ir::Value& v = g.value(g.inputs[i]);
    v.shape = inputs[i].shape();
    v.dim_params.assign(v.shape.size(), "");
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!captured[v].defined()) continue;
    ir::Value& value = g.values[v];
    const Tensor& t = captured[v];
    // Integer decisions keep their values; floating ones (a Range bound) are rounded to the IR dtype.
    value.constant = t.dtype() == value.dtype || !is_floating(t.dtype()) ? t : t.to(value.dtype);
    value.shape = t.shape();
    out.fixed.push_back(value.name);
  }
  // Nodes whose every output is now fixed are dropped; their inputs may die with them (DCE).
  std::vector<ir::Node> kept;
  for (const ir::Node& node : g.nodes) {
    bool all_fixed = !node.outputs.empty();
    for (ir::ValueId v : node.outputs)
      all_fixed = all_fixed && (v == ir::kNoValue || captured[static_cast<size_t>(v)].defined());
    if (!all_fixed) kept.push_back(node);
  }
  g.nodes = std::move(kept);
  return out;
}

}  // namespace lockstep::dynamic
