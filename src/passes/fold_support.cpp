#include "passes/fold_support.h"

#include <algorithm>
#include <cstring>

#include "core/fill.h"
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

// Ops whose outputs are elements of their inputs (moved, selected or repeated; Pad's fill is
// converted to x's dtype either way): folded in the stored dtype, bit-identical to the float64
// path, which widened every input and narrowed every output.
bool moves_elements(ir::Op op) {
  switch (op) {
    case ir::Op::Slice: case ir::Op::Transpose: case ir::Op::Unsqueeze: case ir::Op::Squeeze:
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Concat: case ir::Op::Expand:
    case ir::Op::Split: case ir::Op::Identity: case ir::Op::Pad: case ir::Op::Gather:
    case ir::Op::GatherElements: case ir::Op::GatherND:
      return true;
    default:
      return false;
  }
}

}  // namespace

// The element moves that copy bytes and that a backend runs at any index shape: not the reshapes
// (they share their input's bytes), not GatherND/GatherElements (a backend may refuse their index
// shapes, e.g. cuda's GatherND tuples over 8; folding never does).
bool moves_data(ir::Op op) {
  switch (op) {
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Squeeze: case ir::Op::Unsqueeze: case ir::Op::Identity:
    case ir::Op::GatherND: case ir::Op::GatherElements:
      return false;
    default:
      return moves_elements(op);
  }
}

bool foldable(const ir::Graph& graph, const ir::Node& node, int64_t max_bytes, int64_t max_moved_bytes) {
  if (!all_inputs_constant(graph, node)) return false;
  const int64_t bytes = output_bytes(graph, node);
  if (bytes < 0 || bytes > max_bytes || (moves_data(node.op) && bytes > max_moved_bytes)) return false;
  return !(node.op == ir::Op::ConstantOfShape && bytes >= kFillAtRunTimeBytes);
}

namespace {

// A tensor of `shape` whose every element is `element`'s bytes (a new tensor is zeroed: zeros
// are not written).
Tensor filled_with(DType dtype, const Shape& shape, const std::byte* element) {
  Tensor t(dtype, shape);
  const size_t es = dtype_size(dtype), bytes = t.nbytes();
  auto* dst = static_cast<std::byte*>(t.raw());
  const bool zero = std::all_of(element, element + es, [](std::byte b) { return b == std::byte{0}; });
  if (!zero) fill_repeating(dst, bytes, element, es);
  return t;
}

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
  out.constant = filled_with(out.dtype, out.shape, static_cast<const std::byte*>(fill.raw()));
  return true;
}

// True when `node` moves elements and its floating data (input 0, Concat's every input) already
// has its outputs' dtype, so that no conversion happens on either path.
bool fold_as_stored(const ir::Graph& graph, const ir::Node& node) {
  if (!moves_elements(node.op) || !node.epilogue.empty() || node.inputs.empty() || node.inputs[0] == ir::kNoValue)
    return false;
  const DType data = graph.value(node.inputs[0]).constant.dtype();
  if (!is_floating(data)) return false;  // integer data: the evaluator keeps it as it is already
  const size_t data_inputs = node.op == ir::Op::Concat ? node.inputs.size() : 1;
  for (size_t i = 0; i < data_inputs; ++i)
    if (node.inputs[i] == ir::kNoValue || graph.value(node.inputs[i]).constant.dtype() != data) return false;
  for (ir::ValueId v : node.outputs)
    if (v != ir::kNoValue && graph.value(v).dtype != data) return false;
  return true;
}

// A unary elementwise op on a uniform input (every element the same bytes: the voice's flows
// fold exp(-zeros) of [1, 192, frames] at every new length) from one element: the same value
// as element-by-element, without a float64 copy of the whole tensor each way.
bool fold_uniform_unary(ir::Graph& graph, const ir::Node& node) {
  if (!ir::is_unary_elementwise(node.op) || !node.epilogue.empty() || node.inputs.size() != 1 ||
      node.outputs.size() != 1 || node.outputs[0] == ir::kNoValue)
    return false;
  const Tensor& x = graph.value(node.inputs[0]).constant;
  ir::Value& out = graph.value(node.outputs[0]);
  if (x.numel() < 2 || !is_floating(x.dtype()) || out.shape != x.shape()) return false;
  const size_t es = dtype_size(x.dtype()), bytes = x.nbytes();
  const auto* p = static_cast<const std::byte*>(x.raw());
  for (size_t at = es; at < bytes; at += es)
    if (std::memcmp(p, p + at, es) != 0) return false;
  Tensor one(x.dtype(), {1});
  std::memcpy(one.raw(), p, es);
  Tensor y = reference::evaluate_node(graph, node, {one}).at(0);
  if (y.dtype() != out.dtype) y = y.to(out.dtype);
  out.constant = filled_with(out.dtype, out.shape, static_cast<const std::byte*>(y.raw()));
  return true;
}

}  // namespace

void fold_node(ir::Graph& graph, const ir::Node& node) {
  if (fold_constant_of_shape(graph, node) || fold_uniform_unary(graph, node)) return;
  std::vector<Tensor> inputs;
  for (ir::ValueId v : node.inputs)
    inputs.push_back(v == ir::kNoValue ? Tensor{} : graph.value(v).constant);
  std::vector<Tensor> outputs = fold_as_stored(graph, node) ? reference::evaluate_node_as_stored(graph, node, inputs)
                                                            : reference::evaluate_node(graph, node, inputs);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o] == ir::kNoValue) continue;
    ir::Value& value = graph.value(node.outputs[o]);
    Tensor& t = outputs[o];
    value.constant = t.dtype() == value.dtype ? t : t.to(value.dtype);
    value.shape = t.shape();
  }
}

}  // namespace lockstep::passes
