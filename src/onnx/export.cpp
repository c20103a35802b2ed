#include "onnx/export.h"
namespace lockstep::onnx {
std::string serialize_model(const ir::Graph&) { throw Error(ErrorCode::Internal, "export: not implemented yet"); }
void export_model(const ir::Graph&, const std::string&) { throw Error(ErrorCode::Internal, "export: not implemented yet"); }
}  // namespace lockstep::onnx
