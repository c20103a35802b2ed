// Per-node import: attributes, and conversion of older opset forms to the newest one
// (the IR only knows the newest form of each op; see ir/graph.h).
#include <algorithm>
#include <limits>

#include "onnx/import_attributes.h"
#include "onnx/import_context.h"
#include "onnx/proto_tensor.h"

namespace lockstep::onnx {

namespace {

using ir::Op;

struct NodeScope {
  const std::string& name;
  std::string op;
  int64_t opset;
  [[noreturn]] void fail(ErrorCode code, const std::string& message) const {
    throw Error(code, message + " (opset " + std::to_string(opset) + ")", name, op);
  }
};

// Ops that ONNX introduced after opset 7, the oldest lockstep accepts.
int64_t first_opset(Op op) {
  switch (op) {
    case Op::Expand: return 8;
    case Op::Where: case Op::ConstantOfShape: return 9;
    case Op::Range: return 11;
    case Op::NonZero: return 9;
    case Op::CumSum: case Op::ScatterND: case Op::GatherND: case Op::GatherElements: return 11;
    case Op::Erf: return 9;
    case Op::LessOrEqual: case Op::GreaterOrEqual: return 12;
    default: return 7;
  }
}

// Moves an ints attribute into a constant int64 input at `index` (older opset forms).
void attr_to_input(ir::Node& node, const std::string& attr, size_t index, ImportContext& ctx) {
  std::vector<int64_t> values = node.attrs.get_ints(attr);
  node.attrs.erase(attr);
  Tensor t = Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
  if (node.inputs.size() < index + 1) node.inputs.resize(index + 1, ir::kNoValue);
  node.inputs[index] = ctx.add_constant(node.name + "/" + attr, std::move(t));
}

void reject_attrs(const ir::Node& node, const NodeScope& scope, std::initializer_list<const char*> names,
                  const std::string& why) {
  for (const char* name : names)
    if (node.attrs.has(name))
      scope.fail(ErrorCode::UnsupportedAttribute, std::string("attribute '") + name + "' " + why);
}

void require_inputs(const ir::Node& node, const NodeScope& scope, size_t max_inputs, const std::string& form) {
  if (node.inputs.size() > max_inputs)
    scope.fail(ErrorCode::InvalidModel, scope.op + " " + form + " takes at most " + std::to_string(max_inputs) +
                                            " inputs, got " + std::to_string(node.inputs.size()));
}

void normalize_slice(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (ctx.opset < 10) {
    require_inputs(node, s, 1, "before opset 10");
    if (!node.attrs.has("starts") || !node.attrs.has("ends"))
      s.fail(ErrorCode::InvalidModel, "Slice before opset 10 needs the 'starts' and 'ends' attributes");
    attr_to_input(node, "starts", 1, ctx);
    attr_to_input(node, "ends", 2, ctx);
    if (node.attrs.has("axes")) attr_to_input(node, "axes", 3, ctx);
  } else {
    reject_attrs(node, s, {"starts", "ends", "axes"}, "is an input of Slice since opset 10");
  }
}

void normalize_split(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (ctx.opset < 13) {
    require_inputs(node, s, 1, "before opset 13");
    if (node.attrs.has("split")) attr_to_input(node, "split", 1, ctx);
  } else {
    reject_attrs(node, s, {"split"}, "is an input of Split since opset 13");
  }
  if (ctx.opset < 18) reject_attrs(node, s, {"num_outputs"}, "exists only since opset 18");
  const auto outputs = static_cast<int64_t>(node.outputs.size());
  bool has_split = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
  if (node.attrs.has("num_outputs")) {
    if (has_split) s.fail(ErrorCode::InvalidModel, "Split takes either a 'split' input or 'num_outputs', not both");
    if (node.attrs.get_int("num_outputs", 0) != outputs)
      s.fail(ErrorCode::InvalidModel, "Split has num_outputs " + std::to_string(node.attrs.get_int("num_outputs", 0)) +
                                          " but " + std::to_string(outputs) + " outputs");
  } else if (!has_split) {
    node.attrs.set("num_outputs", outputs);  // equal parts, as the opset-18 form says
  }
}

void normalize_squeeze(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (ctx.opset < 13) {
    require_inputs(node, s, 1, "before opset 13");
    if (node.op == Op::Unsqueeze && !node.attrs.has("axes"))
      s.fail(ErrorCode::InvalidModel, "Unsqueeze before opset 13 needs the 'axes' attribute");
    if (node.attrs.has("axes")) attr_to_input(node, "axes", 1, ctx);
  } else {
    reject_attrs(node, s, {"axes"}, "is an input of " + s.op + " since opset 13");
  }
}

void normalize_pad(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  std::string mode = node.attrs.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    s.fail(ErrorCode::UnsupportedAttribute,
           "Pad mode '" + mode + "' is not supported (lockstep implements constant, reflect and edge)");
  if (ctx.opset < 11) {
    require_inputs(node, s, 1, "before opset 11");
    if (!node.attrs.has("pads")) s.fail(ErrorCode::InvalidModel, "Pad before opset 11 needs the 'pads' attribute");
    float value = node.attrs.get_float("value", 0.0f);
    node.attrs.erase("value");
    attr_to_input(node, "pads", 1, ctx);
    // The constant must have the data's dtype; Pad-2 only takes floating data.
    DType dtype = DType::Float32;
    if (ctx.rank_known.count(node.inputs[0])) dtype = ctx.graph.value(node.inputs[0]).dtype;
    node.inputs.push_back(ctx.add_constant(node.name + "/value", Tensor::scalar<float>(value).to(dtype)));
  } else {
    reject_attrs(node, s, {"pads", "value"}, "is an input of Pad since opset 11");
    if (ctx.opset < 18) require_inputs(node, s, 3, "before opset 18");
  }
}

void normalize_softmax(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (ctx.opset >= 13) return;
  // Before opset 13 Softmax flattens to 2-D at `axis` (default 1); that equals the opset-13
  // form only when axis is the last dim.
  int64_t axis = node.attrs.get_int("axis", 1);
  if (axis != -1) {
    if (node.inputs.empty() || !ctx.rank_known.count(node.inputs[0]))
      s.fail(ErrorCode::UnsupportedAttribute,
             "Softmax before opset 13 with axis " + std::to_string(axis) +
                 " is supported only on the last axis, and the input's rank is not known at import");
    auto rank = static_cast<int64_t>(ctx.graph.value(node.inputs[0]).shape.size());
    if ((axis < 0 ? axis + rank : axis) != rank - 1)
      s.fail(ErrorCode::UnsupportedAttribute, "Softmax before opset 13 with axis " + std::to_string(axis) +
                                                  " on a rank-" + std::to_string(rank) +
                                                  " input is not the last axis; only that form is supported");
  }
  node.attrs.set("axis", int64_t{-1});
}

// Reductions: `axes` is an attribute before opset 13 (ReduceSum) / 18 (the others), an input
// since; noop_with_empty_axes exists since then too. The IR form has the input.
void normalize_reduce(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  const int64_t input_form = node.op == Op::ReduceSum ? 13 : 18;
  if (ctx.opset < input_form) {
    require_inputs(node, s, 1, "before opset " + std::to_string(input_form));
    reject_attrs(node, s, {"noop_with_empty_axes"}, "exists only since opset " + std::to_string(input_form));
    if (node.attrs.has("axes")) attr_to_input(node, "axes", 1, ctx);
  } else {
    reject_attrs(node, s, {"axes"}, "is an input of " + s.op + " since opset " + std::to_string(input_form));
  }
}

// Attributes of the indexing ops that later opsets added.
void normalize_indexing(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (node.op == Op::GatherND && ctx.opset < 12) reject_attrs(node, s, {"batch_dims"}, "exists only since opset 12");
  if (node.op == Op::ScatterND) {
    if (ctx.opset < 16) reject_attrs(node, s, {"reduction"}, "exists only since opset 16");
    std::string r = node.attrs.get_string("reduction", "none");
    bool known = r == "none" || r == "add" || r == "mul" || ((r == "max" || r == "min") && ctx.opset >= 18);
    if (!known) s.fail(ErrorCode::UnsupportedAttribute, "ScatterND reduction '" + r + "' is not supported here");
  }
}

// Clip before opset 11 takes float attributes `min`, `max` (defaults: float32's lowest and max);
// the IR form takes them as inputs 1 and 2, so both become constants of the data's dtype.
void normalize_clip(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  if (ctx.opset >= 11) {
    reject_attrs(node, s, {"min", "max"}, "is an input of Clip since opset 11");
    return;
  }
  require_inputs(node, s, 1, "before opset 11");
  const float lo = node.attrs.get_float("min", std::numeric_limits<float>::lowest());
  const float hi = node.attrs.get_float("max", std::numeric_limits<float>::max());
  node.attrs.erase("min");
  node.attrs.erase("max");
  DType dtype = DType::Float32;
  if (!node.inputs.empty() && ctx.rank_known.count(node.inputs[0])) dtype = ctx.graph.value(node.inputs[0]).dtype;
  if (!is_floating(dtype))
    s.fail(ErrorCode::DTypeMismatch, std::string("Clip before opset 11 takes floating input, got ") + dtype_name(dtype));
  node.inputs.resize(1, ir::kNoValue);
  node.inputs.push_back(ctx.add_constant(node.name + "/min", Tensor::scalar<float>(lo).to(dtype)));
  node.inputs.push_back(ctx.add_constant(node.name + "/max", Tensor::scalar<float>(hi).to(dtype)));
}

void check_values(ir::Node& node, const NodeScope& s, ImportContext& ctx) {
  switch (node.op) {
    case Op::Conv: case Op::ConvTranspose: {
      std::string pad = node.attrs.get_string("auto_pad", "NOTSET");
      if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" && pad != "VALID")
        s.fail(ErrorCode::UnsupportedAttribute, "auto_pad '" + pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
      if (node.attrs.get_int("group", 1) < 1)
        s.fail(ErrorCode::UnsupportedAttribute, "group must be at least 1");
      break;
    }
    case Op::Cast: {
      if (!node.attrs.has("to")) s.fail(ErrorCode::InvalidModel, "Cast needs the 'to' attribute");
      int64_t to = node.attrs.get_int("to", 0);
      if (to < INT32_MIN || to > INT32_MAX || !dtype_from_onnx(static_cast<int32_t>(to)))
        s.fail(ErrorCode::UnsupportedAttribute, "Cast to " + onnx_dtype_name(static_cast<int32_t>(to)) +
                                                    " is not supported (FLOAT, DOUBLE, INT64, INT32, BOOL are)");
      reject_attrs(node, s, {"saturate"}, "exists only since opset 19");
      break;
    }
    case Op::Reshape:
      reject_attrs(node, s, {"shape"}, "is an input of Reshape since opset 5");
      if (ctx.opset < 14) reject_attrs(node, s, {"allowzero"}, "exists only since opset 14");
      break;
    case Op::Shape:
      if (ctx.opset < 15) reject_attrs(node, s, {"start", "end"}, "exists only since opset 15");
      break;
    case Op::Concat:
      if (!node.attrs.has("axis")) s.fail(ErrorCode::InvalidModel, "Concat needs the 'axis' attribute");
      break;
    case Op::Gemm:
      for (const char* t : {"transA", "transB"})
        if (int64_t v = node.attrs.get_int(t, 0); v != 0 && v != 1)
          s.fail(ErrorCode::UnsupportedAttribute, std::string(t) + " must be 0 or 1, got " + std::to_string(v));
      break;
    case Op::ConstantOfShape:
      if (const Tensor* v = node.attrs.get_tensor("value"); v && v->numel() != 1)
        s.fail(ErrorCode::InvalidModel, "ConstantOfShape value must hold one element");
      break;
    default:
      break;
  }
}

}  // namespace

void import_node(const ::onnx::NodeProto& proto, const std::string& node_name, ImportContext& ctx) {
  Op op = *ir::op_from_onnx(proto.op_type());
  NodeScope scope{node_name, proto.op_type(), ctx.opset};
  if (ctx.opset < first_opset(op))
    scope.fail(ErrorCode::InvalidModel, proto.op_type() + " does not exist before opset " +
                                            std::to_string(first_opset(op)));
  ir::Node node;
  node.op = op;
  node.name = node_name;
  node.attrs = import_attributes(proto, op, node_name, ctx.opset);
  for (const std::string& in : proto.input())
    node.inputs.push_back(in.empty() ? ir::kNoValue : ctx.by_name.at(in));
  while (!node.inputs.empty() && node.inputs.back() == ir::kNoValue) node.inputs.pop_back();
  node.outputs.assign(static_cast<size_t>(proto.output_size()), ir::kNoValue);  // filled below

  switch (op) {
    case Op::Slice: normalize_slice(node, scope, ctx); break;
    case Op::Split: normalize_split(node, scope, ctx); break;
    case Op::Squeeze: case Op::Unsqueeze: normalize_squeeze(node, scope, ctx); break;
    case Op::Pad: normalize_pad(node, scope, ctx); break;
    case Op::Softmax: normalize_softmax(node, scope, ctx); break;
    case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin:
      normalize_reduce(node, scope, ctx);
      break;
    case Op::GatherND: case Op::ScatterND: normalize_indexing(node, scope, ctx); break;
    case Op::Clip: normalize_clip(node, scope, ctx); break;
    default: break;
  }
  check_values(node, scope, ctx);

  for (int i = 0; i < proto.output_size(); ++i) {
    const std::string& out = proto.output(i);
    if (out.empty()) continue;
    ir::Value value;
    value.name = out;
    bool known = false;
    if (auto it = ctx.value_info.find(out); it != ctx.value_info.end() && it->second->has_type()) {
      ValueType type = value_type_from_proto(*it->second, "value_info '" + out + "'");
      value.dtype = type.dtype;
      value.shape = type.shape;
      value.dim_params = type.dim_params;
      known = type.has_shape;
    }
    node.outputs[static_cast<size_t>(i)] = ctx.add(std::move(value), known);
  }
  while (!node.outputs.empty() && node.outputs.back() == ir::kNoValue) node.outputs.pop_back();
  if (node.outputs.empty()) scope.fail(ErrorCode::InvalidModel, "node has no outputs");
  ctx.graph.nodes.push_back(std::move(node));
}

Tensor constant_node_value(const ::onnx::NodeProto& proto, const std::string& node_name, int64_t opset) {
  NodeScope s{node_name, "Constant", opset};
  if (proto.attribute_size() != 1)
    s.fail(ErrorCode::InvalidModel, "Constant needs exactly one value attribute, got " +
                                        std::to_string(proto.attribute_size()));
  if (proto.input_size() != 0 || proto.output_size() != 1 || proto.output(0).empty())
    s.fail(ErrorCode::InvalidModel, "Constant takes no inputs and has one named output");
  const auto& a = proto.attribute(0);
  const std::string& name = a.name();
  using AP = ::onnx::AttributeProto;
  auto type = a.type();
  try {
    if (name == "value" && (type == AP::TENSOR || (type == AP::UNDEFINED && a.has_t())))
      return tensor_from_proto(a.t(), "value of Constant '" + node_name + "'");
  } catch (const Error& e) {
    throw Error(e.code(), e.message() + " (opset " + std::to_string(opset) + ")", node_name, "Constant");
  }
  if (name == "value_float" && type == AP::FLOAT) return Tensor::scalar<float>(a.f());
  if (name == "value_int" && type == AP::INT) return Tensor::scalar<int64_t>(a.i());
  if (name == "value_floats" && type == AP::FLOATS)
    return Tensor::from_vector<float>({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
  if (name == "value_ints" && type == AP::INTS)
    return Tensor::from_vector<int64_t>({a.ints_size()}, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  if (name == "value" || name == "value_float" || name == "value_int" || name == "value_floats" ||
      name == "value_ints")
    s.fail(ErrorCode::UnsupportedAttribute, "Constant attribute '" + name + "' has the wrong type");
  s.fail(ErrorCode::UnsupportedAttribute, "Constant attribute '" + name + "' is not supported by lockstep");
}

ValueType value_type_from_proto(const ::onnx::ValueInfoProto& info, const std::string& what) {
  if (!info.has_type() || !info.type().has_tensor_type())
    throw Error(ErrorCode::UnsupportedAttribute,
                what + " is not a tensor (sequence, map, optional and sparse types are not supported)");
  const auto& tt = info.type().tensor_type();
  std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype)
    throw Error(ErrorCode::UnsupportedAttribute, what + " has element type " + onnx_dtype_name(tt.elem_type()) +
                                                     "; lockstep supports FLOAT, DOUBLE, INT64, INT32 and BOOL");
  ValueType type{*dtype, {}, {}, tt.has_shape()};
  bool symbolic = false;
  std::vector<std::string> params;
  for (const auto& dim : tt.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        throw Error(ErrorCode::InvalidModel, what + " has negative dim " + std::to_string(dim.dim_value()));
      type.shape.push_back(dim.dim_value());
      params.emplace_back();
    } else {
      type.shape.push_back(-1);
      params.push_back(dim.dim_param());
      symbolic = true;
    }
  }
  if (symbolic) type.dim_params = std::move(params);
  return type;
}

}  // namespace lockstep::onnx
