// Safe-mode device helpers: NaN fill of fresh buffers and canary guards around every buffer.
#pragma once

#include <cstdint>

#include "backends/cuda/device.h"

namespace lockstep::cuda {

inline constexpr uint8_t kCanaryByte = 0xA5;
inline constexpr uint32_t kNanWord = 0x7FC00000u;  // float32 quiet NaN

struct GuardRange {
  uint64_t begin;  // device address
  uint64_t bytes;
};

// Fills [ptr, ptr+bytes) with the float NaN pattern (byte-exact for any size).
void launch_nan_fill(void* ptr, size_t bytes, cudaStream_t stream);
// Writes into *first_broken the index of the lowest guard with a byte != kCanaryByte (or leaves it).
void launch_canary_check(const GuardRange* guards, int count, uint32_t* first_broken, cudaStream_t stream);
// Test-only: writes one float at `ptr` (just past a buffer's end).
void launch_planted_write(void* ptr, cudaStream_t stream);

}  // namespace lockstep::cuda
