// Random ops: the distribution, dtype and shape. The values come from src/core/random.h.
#include "ir/infer_rules.h"

namespace lockstep::ir {

RandomSpec random_spec(const Node& node, DType like) {
  RandomSpec s;
  s.normal = node.op == Op::RandomNormal || node.op == Op::RandomNormalLike;
  const bool is_like = node.op == Op::RandomNormalLike || node.op == Op::RandomUniformLike;
  if (node.attrs.has("dtype")) {
    const int64_t code = node.attrs.get_int("dtype", 1);
    if (code == 1) s.dtype = DType::Float32;
    else if (code == 11) s.dtype = DType::Float64;
    else
      fail(node, ErrorCode::UnsupportedAttribute,
           "dtype " + std::to_string(code) + " is not supported (1 FLOAT and 11 DOUBLE are)");
  } else if (is_like) {
    if (!is_floating(like))
      fail(node, ErrorCode::DTypeMismatch, std::string("the input is ") + dtype_name(like) +
                                               "; without a 'dtype' attribute the output must be floating");
    s.dtype = like;
  }
  if (s.normal) {
    s.a = attr_double(node.attrs.get_float("mean", 0.0f));
    s.b = attr_double(node.attrs.get_float("scale", 1.0f));
  } else {
    s.a = attr_double(node.attrs.get_float("low", 0.0f));
    s.b = attr_double(node.attrs.get_float("high", 1.0f));
  }
  s.has_seed = node.attrs.has("seed");
  s.seed = node.attrs.get_float("seed", 0.0f);
  return s;
}

std::vector<ValueType> infer_random(const Graph& graph, const Node& node) {
  if (node.op == Op::RandomNormal || node.op == Op::RandomUniform) {
    if (!node.inputs.empty()) fail(node, ErrorCode::InvalidModel, "takes no inputs");
    if (!node.attrs.has("shape")) fail(node, ErrorCode::InvalidModel, "needs the 'shape' attribute");
    Shape shape = node.attrs.get_ints("shape");
    for (int64_t d : shape)
      if (d < 0) fail(node, ErrorCode::InvalidModel, "shape " + shape_str(shape) + " has a negative dim");
    return {{random_spec(node, DType::Float32).dtype, shape}};
  }
  if (node.inputs.empty() || node.inputs[0] == kNoValue)
    fail(node, ErrorCode::InvalidModel, "required input 0 is missing");
  const Value& x = graph.value(node.inputs[0]);
  return {{random_spec(node, x.dtype).dtype, x.shape}};
}

}  // namespace lockstep::ir
