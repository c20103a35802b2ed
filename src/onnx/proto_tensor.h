// TensorProto <-> Tensor and ONNX dtype codes, shared by the importer and the exporter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lockstep/tensor.h"
#include "onnx/onnx.pb.h"

namespace lockstep::onnx {

// ONNX TensorProto data-type code <-> DType; nullopt for codes lockstep does not implement.
std::optional<DType> dtype_from_onnx(int32_t code);
int32_t dtype_to_onnx(DType dtype);
std::string onnx_dtype_name(int32_t code);  // "FLOAT16 (10)"

// Decodes raw_data or the typed fields. `what` names the tensor in errors ("initializer 'w'").
// Throws InvalidModel for data that does not match the shape or external data, and
// UnsupportedAttribute for a dtype lockstep does not implement.
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& what);
// Fills dims, data_type and raw_data (little-endian, as ONNX requires).
void tensor_to_proto(const Tensor& tensor, ::onnx::TensorProto* proto);

}  // namespace lockstep::onnx
