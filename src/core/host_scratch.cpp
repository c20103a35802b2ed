#include "core/host_scratch.h"

#include <sys/mman.h>

#include <algorithm>
#include <string>

#include "lockstep/error.h"

namespace lockstep {

HostScratch::HostScratch(int64_t region_bytes) : region_((std::max<int64_t>(region_bytes, 64) + 4095) / 4096 * 4096) {}

HostScratch::~HostScratch() {
  if (base_) munmap(base_, mapped_);
}

std::byte* HostScratch::claim(int64_t offset, int64_t bytes, int64_t& high_water, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > region_)
    throw Error(ErrorCode::OutOfMemory, std::string("host scratch: the ") + what + " needs " + std::to_string(bytes) +
                                            " bytes, over its " + std::to_string(region_) + "-byte region");
  if (!base_) {
    // Address space only: untouched pages cost nothing and read as zero.
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_NORESERVE
    flags |= MAP_NORESERVE;
#endif
    mapped_ = static_cast<size_t>(region_) * 2;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) {
      mapped_ = 0;
      throw Error(ErrorCode::OutOfMemory, "host scratch: cannot reserve " + std::to_string(region_ * 2) + " bytes");
    }
    base_ = static_cast<std::byte*>(p);
  }
  high_water = std::max(high_water, bytes);
  return base_ + offset;
}

std::byte* HostScratch::arena(int64_t bytes) { return claim(0, bytes, arena_high_, "arena"); }
std::byte* HostScratch::workspace(int64_t bytes) { return claim(region_, bytes, workspace_high_, "workspace"); }

int64_t HostScratch::arena_high_water() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return arena_high_;
}

int64_t HostScratch::workspace_high_water() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workspace_high_;
}

}  // namespace lockstep
