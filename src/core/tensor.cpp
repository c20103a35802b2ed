#include "lockstep/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace lockstep {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Int32: return 4;
    case DType::Bool: return 1;
  }
  return 1;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::Bool: return "bool";
  }
  return "?";
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64; }

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorCode::LimitExceeded, "negative dimension in shape " + shape_str(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error(ErrorCode::LimitExceeded, "element count of shape " + shape_str(shape) + " overflows int64");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

static std::shared_ptr<std::byte[]> allocate_storage(size_t nbytes) {
  size_t padded = ((nbytes + 63) / 64) * 64;
  if (padded == 0) padded = 64;
  void* p = std::aligned_alloc(64, padded);
  if (!p) throw Error(ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(nbytes) + " bytes");
  std::memset(p, 0, padded);
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = num_elements(shape_);
  if (static_cast<uint64_t>(numel_) > (uint64_t{1} << 40) / dtype_size(dtype_))
    throw Error(ErrorCode::LimitExceeded, "tensor of shape " + shape_str(shape_) + " is larger than 1 TiB");
  storage_ = allocate_storage(nbytes());
}

void Tensor::check_dtype(DType wanted) const {
  if (wanted != dtype_)
    throw Error(ErrorCode::Internal, std::string("tensor holds ") + dtype_name(dtype_) + ", accessed as " +
                                         dtype_name(wanted));
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::over(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage) {
  if (!storage) throw Error(ErrorCode::Internal, "Tensor::over: no storage");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = num_elements(t.shape_);
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (num_elements(shape) != numel_)
    throw Error(ErrorCode::ShapeMismatch, "cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

template <class Out, class In>
static void convert(Out* out, const In* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Out, bool>) out[i] = in[i] != In(0);
    else out[i] = static_cast<Out>(in[i]);
  }
}

template <class In>
static void convert_from(Tensor& out, const In* in, int64_t n) {
  switch (out.dtype()) {
    case DType::Float32: convert(out.data<float>(), in, n); break;
    case DType::Float64: convert(out.data<double>(), in, n); break;
    case DType::Int64: convert(out.data<int64_t>(), in, n); break;
    case DType::Int32: convert(out.data<int32_t>(), in, n); break;
    case DType::Bool: convert(out.data<bool>(), in, n); break;
  }
}

Tensor Tensor::to(DType dtype) const {
  Tensor out(dtype, shape_);
  switch (dtype_) {
    case DType::Float32: convert_from(out, data<float>(), numel_); break;
    case DType::Float64: convert_from(out, data<double>(), numel_); break;
    case DType::Int64: convert_from(out, data<int64_t>(), numel_); break;
    case DType::Int32: convert_from(out, data<int32_t>(), numel_); break;
    case DType::Bool: convert_from(out, data<bool>(), numel_); break;
  }
  return out;
}

double Tensor::element_as_double(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return data<float>()[i];
    case DType::Float64: return data<double>()[i];
    case DType::Int64: return static_cast<double>(data<int64_t>()[i]);
    case DType::Int32: return data<int32_t>()[i];
    case DType::Bool: return data<bool>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::element_as_int(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return static_cast<int64_t>(data<float>()[i]);
    case DType::Float64: return static_cast<int64_t>(data<double>()[i]);
    case DType::Int64: return data<int64_t>()[i];
    case DType::Int32: return data<int32_t>()[i];
    case DType::Bool: return data<bool>()[i] ? 1 : 0;
  }
  return 0;
}

}  // namespace lockstep
