#include "convert.h"

#include <cstring>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

namespace lockstep::python {
namespace {

// The DLPack dtype of each lockstep dtype.
bool dtype_from_dlpack(const nb::dlpack::dtype& d, DType* out) {
  using nb::dlpack::dtype_code;
  const auto code = static_cast<dtype_code>(d.code);
  if (d.lanes != 1) return false;
  if (code == dtype_code::Float && d.bits == 32) *out = DType::Float32;
  else if (code == dtype_code::Float && d.bits == 64) *out = DType::Float64;
  else if (code == dtype_code::Int && d.bits == 64) *out = DType::Int64;
  else if (code == dtype_code::Int && d.bits == 32) *out = DType::Int32;
  else if (code == dtype_code::Bool && d.bits == 8) *out = DType::Bool;
  else return false;
  return true;
}

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return nb::dtype<float>();
    case DType::Float64: return nb::dtype<double>();
    case DType::Int64: return nb::dtype<int64_t>();
    case DType::Int32: return nb::dtype<int32_t>();
    case DType::Bool: return nb::dtype<bool>();
  }
  throw Error(ErrorCode::Internal, "dlpack_dtype: unknown dtype");
}

using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

bool c_contiguous(const AnyArray& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

}  // namespace

ConversionStats& conversion_stats() {
  static ConversionStats stats;
  return stats;
}

Tensor to_tensor(nb::handle value, const std::string& what) {
  AnyArray array;
  DType dtype{};
  if (!nb::try_cast(value, array) || !dtype_from_dlpack(array.dtype(), &dtype) || !c_contiguous(array)) {
    // Lists, scalars, other dtypes and strided views: numpy makes a C-ordered copy first.
    nb::object np = nb::module_::import_("numpy");
    nb::object copy = np.attr("ascontiguousarray")(value);
    if (!nb::try_cast(copy, array) || !dtype_from_dlpack(array.dtype(), &dtype))
      throw Error(ErrorCode::DTypeMismatch,
                  what + ": dtype " + nb::cast<std::string>(copy.attr("dtype").attr("name")) +
                      " is not one lockstep computes in (float32, float64, int64, int32, bool)");
    ConversionStats& s = conversion_stats();
    ++s.copied;
    s.bytes_copied += array.nbytes();
  } else {
    ++conversion_stats().shared;
  }
  Shape shape(array.ndim());
  for (size_t i = 0; i < array.ndim(); ++i) shape[i] = static_cast<int64_t>(array.shape(i));
  // The storage's deleter drops the array's reference under the GIL: runs release the GIL, and a
  // backend may let go of an input on any thread.
  auto* keep = new AnyArray(std::move(array));
  auto* data = static_cast<std::byte*>(const_cast<void*>(keep->data()));
  std::shared_ptr<std::byte[]> storage(data, [keep](std::byte*) {
    nb::gil_scoped_acquire gil;
    delete keep;
  });
  if (num_elements(shape) == 0) {  // an empty array may have no data pointer
    Tensor empty(dtype, shape);
    return empty;
  }
  return Tensor::over(dtype, std::move(shape), std::move(storage));
}

nb::object to_numpy(Tensor tensor) {
  auto* keep = new Tensor(std::move(tensor));
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(keep->shape().begin(), keep->shape().end());
  nb::ndarray<nb::numpy> array(keep->raw(), shape.size(), shape.data(), owner, nullptr,
                               dlpack_dtype(keep->dtype()));
  return nb::cast(array, nb::rv_policy::reference);
}

nb::object to_device_array(DeviceTensor tensor) {
  auto* keep = new DeviceTensor(std::move(tensor));
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<DeviceTensor*>(p); });
  std::vector<size_t> shape(keep->shape.begin(), keep->shape.end());
  nb::ndarray<> array(keep->data.get(), shape.size(), shape.data(), owner, nullptr, dlpack_dtype(keep->dtype),
                      nb::device::cuda::value, keep->device);
  return nb::cast(array, nb::rv_policy::reference);
}

diff::NamedTensors to_named_tensors(nb::handle mapping, const std::string& what) {
  if (!nb::isinstance<nb::dict>(mapping))
    throw Error(ErrorCode::InvalidArgument, what + " must be a dict of name -> array");
  diff::NamedTensors out;
  for (auto [key, value] : nb::borrow<nb::dict>(mapping)) {
    std::string name = nb::cast<std::string>(nb::str(key));
    out[name] = to_tensor(value, what + " '" + name + "'");
  }
  return out;
}

nb::dict to_dict(const diff::NamedTensors& tensors) {
  nb::dict out;
  for (const auto& [name, tensor] : tensors) out[nb::str(name.c_str())] = to_numpy(tensor);
  return out;
}

}  // namespace lockstep::python
