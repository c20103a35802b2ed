// The Vulkan API as function pointers loaded from libvulkan.so.1 at run time (dlopen): a lockstep
// built with the Vulkan backend starts, and reports vulkan unavailable, where no loader exists.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace lockstep::vulkan {

struct Api {
#define LOCKSTEP_VK_GLOBAL(name) PFN_##name name = nullptr;
#define LOCKSTEP_VK_INSTANCE(name) PFN_##name name = nullptr;
#define LOCKSTEP_VK_DEVICE(name) PFN_##name name = nullptr;
#include "backends/vulkan/vk_functions.inc"
#undef LOCKSTEP_VK_GLOBAL
#undef LOCKSTEP_VK_INSTANCE
#undef LOCKSTEP_VK_DEVICE
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
};

// The process's table (filled by load_loader, load_instance, load_device in that order).
Api& vk();
// Opens the loader ($LOCKSTEP_VULKAN_LOADER, else libvulkan.so.1 / libvulkan.1.dylib / libMoltenVK);
// false with the reason when none opens.
bool load_loader(std::string* why_not);
void load_instance(VkInstance instance);
void load_device(VkDevice device);

}  // namespace lockstep::vulkan
