#include "backends/cuda/safe_mode.h"

namespace lockstep::cuda {
namespace {

__global__ void nan_fill_kernel(uint8_t* p, uint64_t bytes) {
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<uint8_t>(kNanWord >> (8 * (i % 4)));
}

// One block per guard; integer atomicMin only (no float atomics anywhere).
__global__ void canary_kernel(const GuardRange* guards, uint32_t* first_broken) {
  const GuardRange g = guards[blockIdx.x];
  const uint8_t* p = reinterpret_cast<const uint8_t*>(g.begin);
  for (uint64_t i = threadIdx.x; i < g.bytes; i += blockDim.x)
    if (p[i] != kCanaryByte) {
      atomicMin(first_broken, static_cast<uint32_t>(blockIdx.x));
      return;
    }
}

__global__ void planted_write_kernel(float* p) { *p = 12345.0f; }

}  // namespace

void launch_nan_fill(void* ptr, size_t bytes, cudaStream_t s) {
  if (bytes) nan_fill_kernel<<<grid_for(static_cast<int64_t>(bytes)), kBlock, 0, s>>>(static_cast<uint8_t*>(ptr), bytes);
}

void launch_canary_check(const GuardRange* guards, int count, uint32_t* first_broken, cudaStream_t s) {
  if (count > 0) canary_kernel<<<static_cast<unsigned>(count), 128, 0, s>>>(guards, first_broken);
}

void launch_planted_write(void* ptr, cudaStream_t s) { planted_write_kernel<<<1, 1, 0, s>>>(static_cast<float*>(ptr)); }

}  // namespace lockstep::cuda
