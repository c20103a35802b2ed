#include "backends/cuda/pinned_pool.h"

#include <cuda_runtime.h>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

std::shared_ptr<PinnedPool> PinnedPool::make(size_t bytes, int cap) {
  return std::shared_ptr<PinnedPool>(new PinnedPool(bytes, cap));
}

PinnedPool::~PinnedPool() {
  DeviceSetupLock setup(device_setup_mutex());
  for (std::byte* p : idle_) cudaFreeHost(p);
}

std::shared_ptr<std::byte[]> PinnedPool::take() {
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      p = idle_.back();
      idle_.pop_back();
    } else if (allocated_ < cap_) {
      DeviceSetupLock setup(device_setup_mutex());
      void* fresh = nullptr;
      if (cudaHostAlloc(&fresh, bytes_, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();  // clear it: the run goes on through the staging buffer
        return nullptr;
      }
      p = static_cast<std::byte*>(fresh);
      ++allocated_;
    } else {
      return nullptr;
    }
  }
  std::shared_ptr<PinnedPool> self = shared_from_this();
  return std::shared_ptr<std::byte[]>(p, [self](std::byte* q) { self->give_back(q); });
}

void PinnedPool::give_back(std::byte* p) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(p);
}

}  // namespace lockstep::cuda
