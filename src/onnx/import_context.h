// State shared by the importer's graph assembly (import.cpp) and per-node conversion
// (import_node.cpp): the graph being built and a name -> value map.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>

#include "ir/graph.h"
#include "onnx/onnx.pb.h"

namespace lockstep::onnx {

struct ImportContext {
  ir::Graph& graph;
  int64_t opset;
  std::unordered_map<std::string, ir::ValueId> by_name;
  std::set<ir::ValueId> rank_known;  // values whose shape came from the model (inputs, value_info, ...)
  std::unordered_map<std::string, const ::onnx::ValueInfoProto*> value_info;

  ir::ValueId add(ir::Value value, bool rank_is_known);
  // A fresh constant value named after the node and the parameter ("Slice_3/starts").
  ir::ValueId add_constant(const std::string& base_name, Tensor tensor);
};

// Imports one non-Constant node (already checked: op known, inputs exist, topological order)
// and appends it to ctx.graph.nodes, converting older opset forms to the newest one.
void import_node(const ::onnx::NodeProto& proto, const std::string& node_name, ImportContext& ctx);

// Decodes a Constant node's value attribute.
Tensor constant_node_value(const ::onnx::NodeProto& proto, const std::string& node_name, int64_t opset);

// The dtype and shape of a ValueInfoProto. Symbolic or missing dims become -1 with their
// dim_param names in `dim_params` (left empty when every dim is static).
struct ValueType {
  DType dtype;
  Shape shape;
  std::vector<std::string> dim_params;
  bool has_shape = false;
};
ValueType value_type_from_proto(const ::onnx::ValueInfoProto& info, const std::string& what);

}  // namespace lockstep::onnx
