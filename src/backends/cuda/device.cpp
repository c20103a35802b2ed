#include "backends/cuda/device.h"

#include <cstdio>

namespace lockstep::cuda {

void check_cuda(cudaError_t status, const std::string& what, const std::string& node) {
  if (status == cudaSuccess) return;
  std::string message = "cuda: " + what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  cudaGetLastError();  // clear the sticky-free error so later calls are not blamed for it
  if (status == cudaErrorMemoryAllocation) throw Error(ErrorCode::OutOfMemory, message, node);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver ||
      status == cudaErrorInvalidDevice || status == cudaErrorDevicesUnavailable ||
      status == cudaErrorInitializationError || status == cudaErrorSystemDriverMismatch ||
      status == cudaErrorCompatNotSupportedOnDevice)
    throw Error(ErrorCode::DeviceUnavailable, message, node);
  throw Error(ErrorCode::Internal, message, node);
}

void check_cublas(cublasStatus_t status, const std::string& what, const std::string& node) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message = "cublas: " + what + ": status " + std::to_string(static_cast<int>(status));
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw Error(ErrorCode::OutOfMemory, message, node);
  if (status == CUBLAS_STATUS_NOT_INITIALIZED || status == CUBLAS_STATUS_ARCH_MISMATCH)
    throw Error(ErrorCode::DeviceUnavailable, message, node);
  throw Error(ErrorCode::Internal, message, node);
}

void check_cudnn(cudnnStatus_t status, const std::string& what, const std::string& node) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  std::string message = "cudnn: " + what + ": " + cudnnGetErrorString(status);
  if (status == CUDNN_STATUS_ALLOC_FAILED) throw Error(ErrorCode::OutOfMemory, message, node);
  throw Error(ErrorCode::Internal, message, node);
}

bool device_available(std::string* why_not) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_not) *why_not = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
    cudaGetLastError();
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "cudaGetDeviceCount found no device";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    if (why_not) *why_not = "cannot read the properties of CUDA device 0";
    cudaGetLastError();
    return false;
  }
  if (prop.major < 9) {
    if (why_not)
      *why_not = std::string("CUDA device 0 (") + prop.name + ") has compute capability " +
                 std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                 "; lockstep is built for sm_90 and newer";
    return false;
  }
  return true;
}

size_t device_elem_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::Float64: case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 4;
}

size_t value_device_bytes(const ir::Value& value) {
  return static_cast<size_t>(num_elements(value.shape)) * device_elem_size(value.dtype);
}

Precision parse_precision(const std::string& name) {
  if (name == "fp32" || name.empty()) return Precision::kFp32;
  if (name == "tf32") return Precision::kTf32;
  if (name == "fp16") return Precision::kFp16;
  if (name == "bf16") return Precision::kBf16;
  throw Error(ErrorCode::InvalidArgument, "unknown precision '" + name + "' (known: fp32, tf32, fp16, bf16)");
}

DType device_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float32 : dtype; }

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  return strides;
}

std::recursive_mutex& device_setup_mutex() {
  static auto* m = new std::recursive_mutex;  // never destroyed: executables may outlive static destruction
  return *m;
}

DeviceFloats::~DeviceFloats() {
  DeviceSetupLock lock(device_setup_mutex());
  if (ptr) cudaFree(ptr);
}

std::string storage_key(const Tensor& constant) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", constant.raw());
  return "@" + std::string(address) + "|" + std::to_string(constant.nbytes()) + "|" + dtype_name(constant.dtype());
}

std::shared_ptr<DeviceFloats> upload_floats(const std::vector<float>& host, const std::string& what, const std::string& node) {
  DeviceSetupLock lock(device_setup_mutex());
  auto d = std::make_shared<DeviceFloats>();
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&d->ptr), host.size() * sizeof(float)), what, node);
  check_cuda(cudaMemcpy(d->ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "upload " + what, node);
  return d;
}

}  // namespace lockstep::cuda
