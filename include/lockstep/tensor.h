// Dense host tensors: a dtype, a static shape and 64-byte-aligned shared storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "lockstep/error.h"

namespace lockstep {

enum class DType : uint8_t { Float32, Float64, Int64, Int32, Bool };

using Shape = std::vector<int64_t>;

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool is_floating(DType dtype);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else static_assert(sizeof(T) == 0, "unsupported element type");
}

// Product of dims; throws LimitExceeded on negative dims or int64 overflow.
int64_t num_elements(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[1,128,1024]"

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // A tensor over storage allocated elsewhere (at least nbytes, aligned for the dtype; its deleter
  // releases it): the CUDA backend hands out outputs copied straight into pinned host buffers, and
  // the Python package shares numpy inputs. Backends copy inputs into their own aligned buffers.
  static Tensor over(DType dtype, Shape shape, std::shared_ptr<std::byte[]> storage);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    if (static_cast<int64_t>(values.size()) != t.numel())
      throw Error(ErrorCode::Internal, "from_vector: value count does not match shape");
    T* out = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  }
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return storage_.get(); }
  const void* raw() const { return storage_.get(); }
  template <class T>
  T* data() {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<T*>(storage_.get());
  }
  template <class T>
  const T* data() const {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<const T*>(storage_.get());
  }

  // The storage's owner, held weakly by caches keyed by a constant's address (core/hash.h).
  std::weak_ptr<const std::byte[]> storage_owner() const { return storage_; }

  Tensor clone() const;                   // deep copy
  Tensor to(DType dtype) const;           // element-wise conversion (deep copy)
  Tensor reshaped(Shape shape) const;     // shares storage; element count must match
  double element_as_double(int64_t i) const;
  int64_t element_as_int(int64_t i) const;

 private:
  void check_dtype(DType wanted) const;

  DType dtype_ = DType::Float32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> storage_;
};

}  // namespace lockstep
