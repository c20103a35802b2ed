// The Vulkan device of the process: instance, the chosen physical device ($LOCKSTEP_VULKAN_DEVICE:
// an index or a name substring; else the first discrete, integrated, virtual, then CPU device),
// one compute queue, the pipeline layout every shader shares, and the compute pipelines, cached by
// the SHA-256 of their SPIR-V and specialization (content-addressed: the same key is the same
// code). Created on first use and kept until the process exits; Executables own everything else.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "backends/vulkan/vk_api.h"
#include "lockstep/error.h"

namespace lockstep::vulkan {

// Throws Error (OutOfMemory, DeviceUnavailable or Internal by the result) naming `what`.
void check_vk(VkResult result, const std::string& what, const std::string& node = {});

class Device {
 public:
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::string name;    // the driver's device name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string driver;  // "lavapipe", "NVIDIA", "MoltenVK", or the driver's own name
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;  // binding 0 arena, 1 params
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;  // plus a 4-byte push constant
  // Enabled when the device has them: int64 arithmetic (the int/bool kernels compute integers in
  // int64) and float64 (the random kernels' Box-Muller, as the cpu's, in double).
  bool int64 = false, float64 = false;

  // "llvmpipe (LLVM 15.0.6, 256 bits) [lavapipe]".
  std::string description() const { return name + " [" + driver + "]"; }
  // The compute pipeline of embedded shader `shader` with specialization constants 0..7 = `spec`.
  VkPipeline pipeline(const std::string& shader, const std::array<int32_t, 8>& spec);
  // A memory type in `type_bits` with all of `required`, preferring one that also has `preferred`.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;
  // vkQueueSubmit of one command buffer, serialized across Executables (queues need it).
  void submit(VkCommandBuffer commands, VkFence fence);

 private:
  std::mutex mutex_;  // the queue and the pipeline cache
  std::map<std::string, VkPipeline> pipelines_;
};

// The process's device, created on first call; nullptr with the reason when none is usable
// (LOCKSTEP_VULKAN=0: none, without touching the loader).
Device* device(std::string* why_not = nullptr);

}  // namespace lockstep::vulkan
