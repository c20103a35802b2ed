// A stream with its cuBLAS and cuDNN handles, kept for the next CudaExecutable when one is
// destroyed: a voice compiles a new executable per segment and length, and creating the handles
// each time cost compile time and (with cuDNN's and cuBLAS's per-handle state) host memory.
// A set is used by one executable at a time, as before; idle sets are bounded.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace lockstep::cuda {

struct Handles {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
};

// At most this many idle sets are kept; more are destroyed.
inline constexpr int kIdleHandleSets = 16;

// An idle set, or a new one (throws Error naming what failed to be created). The caller sets the
// cuBLAS math mode, atomics mode and workspace it wants: a reused set keeps the last owner's.
Handles acquire_handles();
// Back to the pool once the stream has no work in flight (synchronizes it first).
void release_handles(Handles h) noexcept;

}  // namespace lockstep::cuda
