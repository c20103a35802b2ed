#include "backends/cuda/handle_pool.h"

#include <mutex>
#include <vector>

#include "backends/cuda/device.h"

namespace lockstep::cuda {
namespace {

struct Pool {
  std::mutex mutex;
  std::vector<Handles> idle;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: executables may outlive static destruction order
  return *p;
}

void destroy(Handles& h) noexcept {
  DeviceSetupLock setup(device_setup_mutex());
  if (h.cudnn) cudnnDestroy(h.cudnn);
  if (h.cublas) cublasDestroy(h.cublas);
  h = {};
}

}  // namespace

Handles acquire_handles(cudaStream_t stream) {
  Handles h;
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    if (!pool().idle.empty()) {
      h = pool().idle.back();
      pool().idle.pop_back();
    }
  }
  std::unique_lock<std::recursive_mutex> setup(device_setup_mutex(), std::defer_lock);
  if (!h.cublas || !h.cudnn) setup.lock();  // creating handles allocates; a pooled pair does not
  try {
    if (!h.cublas) check_cublas(cublasCreate(&h.cublas), "create handle");
    if (!h.cudnn) check_cudnn(cudnnCreate(&h.cudnn), "create handle");
    check_cublas(cublasSetStream(h.cublas, stream), "set stream");
    check_cudnn(cudnnSetStream(h.cudnn, stream), "set stream");
  } catch (...) {
    destroy(h);
    throw;
  }
  return h;
}

void release_handles(Handles h, cudaStream_t stream) noexcept {
  if (!h.cublas && !h.cudnn) return;
  if (!stream || cudaStreamSynchronize(stream) != cudaSuccess || !h.cublas || !h.cudnn) {  // a broken stream's pair is not handed on
    cudaGetLastError();
    destroy(h);
    return;
  }
  // The workspace belonged to the last owner's arena: the next owner sets its own.
  cublasSetWorkspace(h.cublas, nullptr, 0);
  std::lock_guard<std::mutex> lock(pool().mutex);
  if (static_cast<int>(pool().idle.size()) >= kIdleHandleSets) {
    destroy(h);
    return;
  }
  pool().idle.push_back(h);
}

}  // namespace lockstep::cuda
