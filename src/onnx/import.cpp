#include "onnx/import.h"
namespace lockstep::onnx {
ir::Graph import_model(const std::string&) { throw Error(ErrorCode::Internal, "import: not implemented yet"); }
ir::Graph import_model_bytes(std::string_view, const std::string&) { throw Error(ErrorCode::Internal, "import: not implemented yet"); }
Tensor load_tensor_proto(const std::string&, std::string*) { throw Error(ErrorCode::Internal, "not implemented yet"); }
}  // namespace lockstep::onnx
