// Reference: the dispatch table (generated from ops.inc), whole-graph and single-node evaluation.
#include "reference/evaluate.h"

#include <array>

#include "reference/kernels.h"

namespace lockstep::reference {

const Tensor& NodeContext::in(size_t i) const {
  if (!has(i)) fail(ErrorCode::InvalidModel, "required input " + std::to_string(i) + " is missing");
  return inputs[i];
}

Tensor to_reference(const Tensor& t) {
  return t.defined() && t.dtype() == DType::Float32 ? t.to(DType::Float64) : t;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> own = strides_of(in), result(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) result[lead + d] = in[d] == 1 ? 0 : own[d];
  return result;
}

std::vector<Tensor> dispatch(const NodeContext& ctx) {
  static constexpr std::array<Evaluator, ir::kOpCount> table = {
#define LOCKSTEP_OP(name, onnx, attrs) &eval_##name,
#include "ir/ops.inc"
#undef LOCKSTEP_OP
  };
  return table[static_cast<size_t>(ctx.node.op)](ctx);
}

namespace {

// Runs one node on reference-typed inputs (floating = Float64) and applies its epilogue.
std::vector<Tensor> run_node(const ir::Graph& graph, const ir::Node& node,
                             const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& operands, uint64_t seed) {
  NodeContext ctx{graph, node, inputs, seed};
  std::vector<Tensor> outputs = dispatch(ctx);
  if (outputs.size() != node.outputs.size())
    ctx.fail(ErrorCode::Internal, "produced " + std::to_string(outputs.size()) +
                                      " outputs, node has " + std::to_string(node.outputs.size()));
  if (!node.epilogue.empty()) {
    outputs[0] = outputs[0].clone();  // outputs may share storage with inputs (Identity, Reshape)
    apply_epilogue(node, outputs[0], operands);
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> evaluate_node(const ir::Graph& graph, const ir::Node& node,
                                  const std::vector<Tensor>& inputs, uint64_t seed) {
  std::vector<Tensor> args;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    args.push_back(i < inputs.size() ? to_reference(inputs[i]) : Tensor{});
  // Epilogue operands: given after the node's inputs, else read from constants.
  std::vector<Tensor> operands;
  for (size_t s = 0; s < node.epilogue.size(); ++s) {
    size_t at = node.inputs.size() + s;
    ir::ValueId v = node.epilogue[s].operand;
    if (at < inputs.size() && inputs[at].defined())
      operands.push_back(to_reference(inputs[at]));
    else if (graph.is_constant(v))
      operands.push_back(to_reference(graph.value(v).constant));
    else
      operands.emplace_back();
  }
  return run_node(graph, node, args, operands, seed);
}

std::vector<Tensor> evaluate_node_as_stored(const ir::Graph& graph, const ir::Node& node,
                                            const std::vector<Tensor>& inputs) {
  if (!node.epilogue.empty())
    throw Error(ErrorCode::Internal, "evaluate_node_as_stored: node has an epilogue", node.name, ir::op_name(node.op));
  return run_node(graph, node, inputs, {}, 0);
}

std::vector<Tensor> evaluate(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                             const TapFn& tap, uint64_t seed, const FaultFn& alter) {
  if (inputs.size() < graph.inputs.size())
    throw Error(ErrorCode::MissingInput,
                "input '" + graph.value(graph.inputs[inputs.size()]).name + "' was not provided (" +
                    std::to_string(graph.inputs.size()) + " inputs expected, " +
                    std::to_string(inputs.size()) + " given)");
  if (inputs.size() > graph.inputs.size())
    throw Error(ErrorCode::InvalidArgument, std::to_string(inputs.size()) +
                                                " inputs given, the graph has " +
                                                std::to_string(graph.inputs.size()));
  std::vector<Tensor> env(graph.values.size());
  auto fetch = [&](ir::ValueId v) -> Tensor {
    if (v == ir::kNoValue) return {};
    Tensor& t = env[static_cast<size_t>(v)];
    if (!t.defined() && graph.is_constant(v)) t = to_reference(graph.value(v).constant);
    if (!t.defined())
      throw Error(ErrorCode::InvalidModel,
                  "value '" + graph.value(v).name + "' is read before it is computed");
    return t;
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    if (!inputs[i].defined())
      throw Error(ErrorCode::MissingInput,
                  "input '" + graph.value(graph.inputs[i]).name + "' is empty");
    env[static_cast<size_t>(graph.inputs[i])] = to_reference(inputs[i]);
  }

  // Release each value after its last reader, except graph outputs.
  std::vector<int> last_use(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ir::ValueId v : graph.nodes[n].inputs)
      if (v != ir::kNoValue) last_use[static_cast<size_t>(v)] = static_cast<int>(n);
    for (const auto& step : graph.nodes[n].epilogue)
      if (step.operand != ir::kNoValue)
        last_use[static_cast<size_t>(step.operand)] = static_cast<int>(n);
  }
  for (ir::ValueId v : graph.outputs)
    last_use[static_cast<size_t>(v)] = static_cast<int>(graph.nodes.size());

  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    std::vector<Tensor> args, operands;
    for (ir::ValueId v : node.inputs) args.push_back(fetch(v));
    for (const auto& step : node.epilogue) operands.push_back(fetch(step.operand));
    std::vector<Tensor> outputs = run_node(graph, node, args, operands, seed);
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (node.outputs[o] == ir::kNoValue) continue;
      if (alter) alter(node, static_cast<int>(o), outputs[o]);
      if (tap) tap(node, static_cast<int>(o), outputs[o]);
      env[static_cast<size_t>(node.outputs[o])] = std::move(outputs[o]);
    }
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && last_use[static_cast<size_t>(v)] == static_cast<int>(n))
        env[static_cast<size_t>(v)] = {};
  }
  std::vector<Tensor> results;
  for (ir::ValueId v : graph.outputs) results.push_back(fetch(v));
  return results;
}

}  // namespace lockstep::reference
