// ONNX protobuf → ir::Graph. Validates everything it reads: a malformed model, an op outside
// ops.inc, an unsupported opset or attribute is an Error naming the node, op and reason.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace lockstep::onnx {

// Reads and imports a model file. Dims that are symbolic (dim_param) stay -1 until
// passes::bind_inputs/infer_shapes resolves them for the given input shapes.
ir::Graph import_model(const std::string& path);
// `base_dir` is the model's folder, where external data is looked up (confined to it; see
// onnx/external_data.h); empty refuses external data (a model from memory has no folder).
// Both check limits::max_model_bytes (file plus external data) and limits::max_nodes.
ir::Graph import_model_bytes(std::string_view bytes, const std::string& base_dir);

// Reads a serialized TensorProto file (the ONNX conformance suite's input_0.pb, ...).
// Returns the tensor and, through `name`, its name.
Tensor load_tensor_proto(const std::string& path, std::string* name = nullptr);

}  // namespace lockstep::onnx
