// ir::Graph → ONNX protobuf, for reproducers and the embedded default. Epilogues are expanded
// back into their ONNX nodes so the file runs in any ONNX runtime.
#pragma once

#include <string>

#include "ir/graph.h"

namespace lockstep::onnx {

std::string serialize_model(const ir::Graph& graph);
// Writes atomically (temporary name, then rename).
void export_model(const ir::Graph& graph, const std::string& path);

}  // namespace lockstep::onnx
