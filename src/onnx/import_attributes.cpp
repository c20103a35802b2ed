#include "onnx/import_attributes.h"

#include "onnx/proto_tensor.h"

namespace lockstep::onnx {

namespace {

using AP = ::onnx::AttributeProto;

const char* type_name(AP::AttributeType type) {
  switch (type) {
    case AP::FLOAT: return "float";
    case AP::INT: return "int";
    case AP::STRING: return "string";
    case AP::TENSOR: return "tensor";
    case AP::FLOATS: return "floats";
    case AP::INTS: return "ints";
    case AP::STRINGS: return "strings";
    case AP::GRAPH: return "graph";
    case AP::GRAPHS: return "graphs";
    case AP::TENSORS: return "tensors";
    case AP::SPARSE_TENSOR: return "sparse tensor";
    case AP::SPARSE_TENSORS: return "sparse tensors";
    case AP::TYPE_PROTO: return "type proto";
    case AP::TYPE_PROTOS: return "type protos";
    default: return "undefined";
  }
}

// Old writers leave `type` unset; infer it from the field that holds the value.
AP::AttributeType effective_type(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  return AP::UNDEFINED;
}

}  // namespace

AP::AttributeType attribute_type(ir::Op op, const std::string& name) {
  using ir::Op;
  if (name == "value") return op == Op::ConstantOfShape ? AP::TENSOR : AP::FLOAT;  // Pad-2 value is a float
  if (name == "alpha" || name == "beta") return AP::FLOAT;
  if (name == "auto_pad" || name == "mode" || name == "reduction") return AP::STRING;
  // Reductions, CumSum, indexing, random ops
  if (name == "keepdims" || name == "noop_with_empty_axes" || name == "exclusive" || name == "reverse" ||
      name == "batch_dims" || name == "dtype")
    return AP::INT;
  if (name == "mean" || name == "scale" || name == "low" || name == "high" || name == "seed") return AP::FLOAT;
  if (op == Op::Clip && (name == "min" || name == "max")) return AP::FLOAT;  // Clip-6 attributes
  if (name == "dilations" || name == "kernel_shape" || name == "pads" || name == "strides" ||
      name == "output_padding" || name == "output_shape" || name == "starts" || name == "ends" ||
      name == "axes" || name == "split" || name == "perm" || name == "shape")
    return AP::INTS;
  if (name == "group" || name == "transA" || name == "transB" || name == "axis" || name == "num_outputs" ||
      name == "allowzero" || name == "to" || name == "saturate" || name == "start" || name == "end")
    return AP::INT;
  return AP::UNDEFINED;
}

ir::Attributes import_attributes(const ::onnx::NodeProto& proto, ir::Op op, const std::string& node_name,
                                 int64_t opset) {
  const std::string op_type = ir::op_name(op);
  const std::string where = " (opset " + std::to_string(opset) + ")";
  ir::Attributes attrs;
  for (const AP& a : proto.attribute()) {
    const std::string& name = a.name();
    if (!a.ref_attr_name().empty())
      throw Error(ErrorCode::UnsupportedAttribute, "attribute '" + name + "' refers to a function attribute" + where,
                  node_name, op_type);
    if (!ir::op_accepts_attribute(op, name))
      throw Error(ErrorCode::UnsupportedAttribute,
                  "attribute '" + name + "' of " + op_type + " is not supported by lockstep" + where, node_name,
                  op_type);
    if (attrs.has(name))
      throw Error(ErrorCode::InvalidModel, "attribute '" + name + "' is given twice" + where, node_name, op_type);
    AP::AttributeType want = attribute_type(op, name);
    AP::AttributeType got = effective_type(a);
    if (want == AP::UNDEFINED)
      throw Error(ErrorCode::Internal, "attribute type table is out of sync with ops.inc for '" + name + "'",
                  node_name, op_type);
    if (got != want)
      throw Error(ErrorCode::UnsupportedAttribute,
                  "attribute '" + name + "' of " + op_type + " must be of type " + type_name(want) + ", got " +
                      type_name(got) + where,
                  node_name, op_type);
    switch (got) {
      case AP::FLOAT: attrs.set(name, a.f()); break;
      case AP::INT: attrs.set(name, static_cast<int64_t>(a.i())); break;
      case AP::STRING: attrs.set(name, a.s()); break;
      case AP::FLOATS: attrs.set(name, std::vector<float>(a.floats().begin(), a.floats().end())); break;
      case AP::INTS: attrs.set(name, std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
      case AP::TENSOR: {
        try {
          attrs.set(name, tensor_from_proto(a.t(), "tensor of attribute '" + name + "'"));
        } catch (const Error& e) {
          throw Error(e.code(), e.message() + where, node_name, op_type);
        }
        break;
      }
      default:
        throw Error(ErrorCode::Internal, "attribute type table is out of sync with ops.inc for '" + name + "'",
                    node_name, op_type);
    }
  }
  return attrs;
}

}  // namespace lockstep::onnx
