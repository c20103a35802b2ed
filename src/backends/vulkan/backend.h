#pragma once
#include <string>

#include "lockstep/lockstep.h"
namespace lockstep::vulkan {
const Backend& backend();  // "vulkan": float32 compute shaders on a Vulkan device; unavailable without one
// The device runs would use ("llvmpipe (LLVM 15.0.6, 256 bits) [lavapipe]"), or why there is none.
std::string device_description();
}  // namespace lockstep::vulkan
