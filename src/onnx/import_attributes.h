// AttributeProto -> ir::Attribute with the per-op schema check (name and type).
#pragma once

#include <string>

#include "ir/attributes.h"
#include "ir/op.h"
#include "onnx/onnx.pb.h"

namespace lockstep::onnx {

// Converts every attribute of `proto` after checking it is in the op's schema (ops.inc) and of
// the type ONNX defines for it. Errors name the node, op, opset and attribute.
ir::Attributes import_attributes(const ::onnx::NodeProto& proto, ir::Op op, const std::string& node_name,
                                 int64_t opset);

// The ONNX type of an attribute the op accepts (UNDEFINED when unknown).
::onnx::AttributeProto::AttributeType attribute_type(ir::Op op, const std::string& name);

}  // namespace lockstep::onnx
