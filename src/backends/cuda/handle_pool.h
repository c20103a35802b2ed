// cuBLAS and cuDNN handles lent to a CudaExecutable while it enqueues work from the host
// (compile, graph capture, eager and profiled runs) and then handed back: a replayed graph needs
// neither. A voice compiles a new executable per segment and length; creating a pair cost ~2 ms
// an executable on the H200 host, and each pair held host memory while its executable lived.
// A pair is used by one executable at a time; idle pairs are bounded.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace lockstep::cuda {

struct Handles {
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
};

// At most this many idle pairs are kept; more are destroyed.
inline constexpr int kIdleHandleSets = 16;

// An idle pair, or a new one (throws Error naming what failed to be created), bound to `stream`.
// The caller sets the cuBLAS math mode, atomics mode and workspace it wants: a reused pair keeps
// the last owner's.
Handles acquire_handles(cudaStream_t stream);
// Back to the pool once `stream` (the one they were bound to) has no work in flight: synchronizes it.
void release_handles(Handles h, cudaStream_t stream) noexcept;

}  // namespace lockstep::cuda
