// Reductions (ReduceMean/Sum/Max/Min) and CumSum: which dims are reduced, output shapes.
#include "ir/infer_rules.h"

namespace lockstep::ir {

namespace {

std::vector<int64_t> constant_ints(const Node& node, const Value& v, size_t i) {
  if (!v.constant.defined())
    fail(node, ErrorCode::UnsupportedAttribute,
         "parameter input " + std::to_string(i) + " ('" + v.name + "') is not a compile-time constant");
  return tensor_ints(v.constant);
}

}  // namespace

std::vector<char> reduce_mask(const Node& node, int64_t rank, const std::vector<int64_t>* axes) {
  std::vector<char> mask(static_cast<size_t>(rank), 0);
  if (!axes || axes->empty()) {
    if (node.attrs.get_int("noop_with_empty_axes", 0) == 0) std::fill(mask.begin(), mask.end(), 1);
    return mask;
  }
  for (int64_t a : *axes) {
    auto d = static_cast<size_t>(normalize_axis(node, a, rank, "axes"));
    if (mask[d]) fail(node, ErrorCode::InvalidModel, "axis " + std::to_string(a) + " is given twice");
    mask[d] = 1;
  }
  return mask;
}

Shape reduce_shape(const Node& node, const Shape& x, const std::vector<char>& mask) {
  const bool keep = node.attrs.get_int("keepdims", 1) != 0;
  Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!mask[d]) out.push_back(x[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}

int64_t cumsum_axis(const Node& node, int64_t rank, const std::vector<int64_t>& axis) {
  if (axis.size() != 1)
    fail(node, ErrorCode::ShapeMismatch, "axis must hold one value, got " + std::to_string(axis.size()));
  return normalize_axis(node, axis[0], rank, "axis");
}

std::vector<ValueType> infer_reduce(const Graph& graph, const Node& node) {
  const Value& x = required_input(graph, node, 0);
  if (x.dtype == DType::Bool) fail(node, ErrorCode::DTypeMismatch, "does not accept bool input");
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (node.op == Op::CumSum) {
    const Value& axis = required_input(graph, node, 1);
    if (axis.dtype != DType::Int64 && axis.dtype != DType::Int32)
      fail(node, ErrorCode::DTypeMismatch, "CumSum axis must be int32 or int64");
    cumsum_axis(node, rank, constant_ints(node, axis, 1));
    return {{x.dtype, x.shape}};
  }
  std::optional<std::vector<int64_t>> axes;
  if (node.inputs.size() > 1 && node.inputs[1] != kNoValue) axes = constant_ints(node, required_input(graph, node, 1), 1);
  return {{x.dtype, reduce_shape(node, x.shape, reduce_mask(node, rank, axes ? &*axes : nullptr))}};
}

}  // namespace lockstep::ir
