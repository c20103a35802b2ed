#include "onnx/proto_tensor.h"

#include <cstring>

namespace lockstep::onnx {

namespace {

const char* code_name(int32_t code) {
  switch (code) {
    case ::onnx::TensorProto::FLOAT: return "FLOAT";
    case ::onnx::TensorProto::UINT8: return "UINT8";
    case ::onnx::TensorProto::INT8: return "INT8";
    case ::onnx::TensorProto::UINT16: return "UINT16";
    case ::onnx::TensorProto::INT16: return "INT16";
    case ::onnx::TensorProto::INT32: return "INT32";
    case ::onnx::TensorProto::INT64: return "INT64";
    case ::onnx::TensorProto::STRING: return "STRING";
    case ::onnx::TensorProto::BOOL: return "BOOL";
    case ::onnx::TensorProto::FLOAT16: return "FLOAT16";
    case ::onnx::TensorProto::DOUBLE: return "DOUBLE";
    case ::onnx::TensorProto::UINT32: return "UINT32";
    case ::onnx::TensorProto::UINT64: return "UINT64";
    case ::onnx::TensorProto::COMPLEX64: return "COMPLEX64";
    case ::onnx::TensorProto::COMPLEX128: return "COMPLEX128";
    case ::onnx::TensorProto::BFLOAT16: return "BFLOAT16";
    default: return "UNDEFINED";
  }
}

// Copies `count` typed-field values into the tensor after checking the count.
template <class Out, class Field>
void copy_typed(const Field& field, Tensor& tensor, const std::string& what, const char* field_name) {
  if (static_cast<int64_t>(field.size()) != tensor.numel())
    throw Error(ErrorCode::InvalidModel, what + " has " + std::to_string(field.size()) + " values in " +
                                             field_name + " but its shape " + shape_str(tensor.shape()) +
                                             " needs " + std::to_string(tensor.numel()));
  Out* out = tensor.data<Out>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Out>(field.Get(i));
}

}  // namespace

std::optional<DType> dtype_from_onnx(int32_t code) {
  switch (code) {
    case ::onnx::TensorProto::FLOAT: return DType::Float32;
    case ::onnx::TensorProto::DOUBLE: return DType::Float64;
    case ::onnx::TensorProto::INT64: return DType::Int64;
    case ::onnx::TensorProto::INT32: return DType::Int32;
    case ::onnx::TensorProto::BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

int32_t dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::Float32: return ::onnx::TensorProto::FLOAT;
    case DType::Float64: return ::onnx::TensorProto::DOUBLE;
    case DType::Int64: return ::onnx::TensorProto::INT64;
    case DType::Int32: return ::onnx::TensorProto::INT32;
    case DType::Bool: return ::onnx::TensorProto::BOOL;
  }
  throw Error(ErrorCode::Internal, "dtype_to_onnx: unknown dtype");
}

std::string onnx_dtype_name(int32_t code) { return std::string(code_name(code)) + " (" + std::to_string(code) + ")"; }

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& what) {
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    throw Error(ErrorCode::InvalidModel, what + " uses external data, which lockstep reads only for initializers of a model loaded from a file");
  if (proto.has_segment()) throw Error(ErrorCode::InvalidModel, what + " is segmented, which is not supported");
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype)
    throw Error(ErrorCode::UnsupportedAttribute, what + " has data type " + onnx_dtype_name(proto.data_type()) +
                                                     "; lockstep supports FLOAT, DOUBLE, INT64, INT32 and BOOL");
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorCode::InvalidModel, what + " has a negative dim in " + shape_str(shape));
  int64_t count = num_elements(shape);  // throws LimitExceeded on overflow

  // Check the data size before allocating, so a hostile shape cannot make us allocate.
  const size_t elem = dtype_size(*dtype);
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() / elem != static_cast<size_t>(count) || raw.size() % elem != 0)
      throw Error(ErrorCode::InvalidModel, what + " has " + std::to_string(raw.size()) + " bytes of raw_data but its " +
                                               dtype_name(*dtype) + " shape " + shape_str(shape) + " needs " +
                                               std::to_string(static_cast<size_t>(count) * elem));
    Tensor t(*dtype, shape);
    if (*dtype == DType::Bool) {
      bool* out = t.data<bool>();
      for (int64_t i = 0; i < count; ++i) out[i] = raw[static_cast<size_t>(i)] != 0;
    } else if (count > 0) {
      std::memcpy(t.raw(), raw.data(), raw.size());  // lockstep runs on little-endian hosts only
    }
    return t;
  }

  int64_t typed_count = 0;
  switch (*dtype) {
    case DType::Float32: typed_count = proto.float_data_size(); break;
    case DType::Float64: typed_count = proto.double_data_size(); break;
    case DType::Int64: typed_count = proto.int64_data_size(); break;
    case DType::Int32: case DType::Bool: typed_count = proto.int32_data_size(); break;
  }
  if (typed_count != count)
    throw Error(ErrorCode::InvalidModel, what + " has " + std::to_string(typed_count) + " values but its shape " +
                                             shape_str(shape) + " needs " + std::to_string(count));
  Tensor t(*dtype, shape);
  switch (*dtype) {
    case DType::Float32: copy_typed<float>(proto.float_data(), t, what, "float_data"); break;
    case DType::Float64: copy_typed<double>(proto.double_data(), t, what, "double_data"); break;
    case DType::Int64: copy_typed<int64_t>(proto.int64_data(), t, what, "int64_data"); break;
    case DType::Int32: copy_typed<int32_t>(proto.int32_data(), t, what, "int32_data"); break;
    case DType::Bool: {
      bool* out = t.data<bool>();
      for (int64_t i = 0; i < count; ++i) out[i] = proto.int32_data(static_cast<int>(i)) != 0;
      break;
    }
  }
  return t;
}

void tensor_to_proto(const Tensor& tensor, ::onnx::TensorProto* proto) {
  proto->clear_dims();
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  proto->set_data_type(dtype_to_onnx(tensor.dtype()));
  if (tensor.dtype() == DType::Bool) {
    std::string raw(static_cast<size_t>(tensor.numel()), '\0');
    const bool* in = tensor.data<bool>();
    for (int64_t i = 0; i < tensor.numel(); ++i) raw[static_cast<size_t>(i)] = in[i] ? 1 : 0;
    proto->set_raw_data(std::move(raw));
  } else {
    proto->set_raw_data(tensor.nbytes() ? std::string(static_cast<const char*>(tensor.raw()), tensor.nbytes()) : "");
  }
}

}  // namespace lockstep::onnx
