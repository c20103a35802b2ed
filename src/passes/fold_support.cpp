#include "passes/fold_support.h"

#include <algorithm>
#include <cstring>

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

namespace {

// ConstantOfShape straight in its output's dtype, one value's bytes repeated: the float64
// evaluator fills a double tensor and converts it (a new sentence length folded 17 zero fills of
// ~1 MB in the voice's flows, 1-8 ms each). The same value either way: one element, converted once.
bool fold_constant_of_shape(ir::Graph& graph, const ir::Node& node) {
  if (node.op != ir::Op::ConstantOfShape || !node.epilogue.empty() || node.outputs.size() != 1 ||
      node.outputs[0] == ir::kNoValue)
    return false;
  ir::Value& out = graph.value(node.outputs[0]);
  const Tensor* value = node.attrs.get_tensor("value");
  if (!out.shape_known() || (value && (value->numel() != 1 || value->dtype() != out.dtype)) ||
      (!value && out.dtype != DType::Float32))
    return false;  // the evaluator handles (and reports) the rest
  const Tensor fill = value ? *value : Tensor::scalar<float>(0.0f);
  Tensor t(out.dtype, out.shape);
  const size_t es = dtype_size(out.dtype), bytes = t.nbytes();
  auto* dst = static_cast<std::byte*>(t.raw());
  const auto* src = static_cast<const std::byte*>(fill.raw());
  const bool zero = std::all_of(src, src + es, [](std::byte b) { return b == std::byte{0}; });
  if (!zero && bytes > 0) {  // a new tensor is zeroed already
    std::memcpy(dst, src, es);
    for (size_t done = es; done < bytes; done *= 2) std::memcpy(dst + done, dst, std::min(done, bytes - done));
  }
  out.constant = std::move(t);
  return true;
}

}  // namespace

void fold_node(ir::Graph& graph, const ir::Node& node) {
  if (fold_constant_of_shape(graph, node)) return;
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
