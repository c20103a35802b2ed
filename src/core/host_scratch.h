// Host scratch memory that several executables take turns in: the run-time shape stage runs its
// segments one after another, so each segment's arena and workspace can live at the same
// addresses. Pages touched once stay mapped, so a new length faults in only what exceeds the
// largest run so far, and resident memory is the largest segment's, not the sum of all cached ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace lockstep {

class HostScratch {
 public:
  // Reserves address space (no memory) for an arena and a workspace of up to `region_bytes` each.
  explicit HostScratch(int64_t region_bytes);
  ~HostScratch();
  HostScratch(const HostScratch&) = delete;
  HostScratch& operator=(const HostScratch&) = delete;

  // The start of the arena / workspace region, for a user that needs `bytes` of it; throws
  // Error(OutOfMemory) when that is more than the region (or the reservation failed).
  std::byte* arena(int64_t bytes);
  std::byte* workspace(int64_t bytes);

  int64_t region_bytes() const { return region_; }
  // The most bytes any user asked of each region (what can be resident).
  int64_t arena_high_water() const;
  int64_t workspace_high_water() const;

 private:
  std::byte* claim(int64_t offset, int64_t bytes, int64_t& high_water, const char* what);

  int64_t region_ = 0;
  std::byte* base_ = nullptr;  // 2 * region_ bytes mapped, or null until first use
  size_t mapped_ = 0;
  int64_t arena_high_ = 0, workspace_high_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace lockstep
