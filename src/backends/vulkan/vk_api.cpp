#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace lockstep::vulkan {

Api& vk() {
  static Api api;
  return api;
}

bool load_loader(std::string* why_not) {
  std::vector<std::string> names;
  if (const char* env = std::getenv("LOCKSTEP_VULKAN_LOADER"); env && *env) names.push_back(env);
  names.insert(names.end(), {"libvulkan.so.1", "libvulkan.so", "libvulkan.1.dylib", "libMoltenVK.dylib"});
  std::string tried;
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
      continue;
    }
    auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
    if (!get) {
      tried += (tried.empty() ? "" : "; ") + name + " has no vkGetInstanceProcAddr";
      dlclose(handle);
      continue;
    }
    Api& api = vk();
    api.vkGetInstanceProcAddr = get;
#define LOCKSTEP_VK_GLOBAL(name) api.name = reinterpret_cast<PFN_##name>(get(nullptr, #name));
#define LOCKSTEP_VK_INSTANCE(name)
#define LOCKSTEP_VK_DEVICE(name)
#include "backends/vulkan/vk_functions.inc"
#undef LOCKSTEP_VK_GLOBAL
#undef LOCKSTEP_VK_INSTANCE
#undef LOCKSTEP_VK_DEVICE
    if (!api.vkCreateInstance) {
      if (why_not) *why_not = name + ": vkCreateInstance not found";
      return false;
    }
    return true;  // the handle stays open for the process's lifetime
  }
  if (why_not) *why_not = "no Vulkan loader (" + tried + "); install libvulkan1 and a driver (mesa-vulkan-drivers for lavapipe)";
  return false;
}

void load_instance(VkInstance instance) {
  Api& api = vk();
#define LOCKSTEP_VK_GLOBAL(name)
#define LOCKSTEP_VK_INSTANCE(name) api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));
#define LOCKSTEP_VK_DEVICE(name)
#include "backends/vulkan/vk_functions.inc"
#undef LOCKSTEP_VK_GLOBAL
#undef LOCKSTEP_VK_INSTANCE
#undef LOCKSTEP_VK_DEVICE
}

void load_device(VkDevice device) {
  Api& api = vk();
#define LOCKSTEP_VK_GLOBAL(name)
#define LOCKSTEP_VK_INSTANCE(name)
#define LOCKSTEP_VK_DEVICE(name) api.name = reinterpret_cast<PFN_##name>(api.vkGetDeviceProcAddr(device, #name));
#include "backends/vulkan/vk_functions.inc"
#undef LOCKSTEP_VK_GLOBAL
#undef LOCKSTEP_VK_INSTANCE
#undef LOCKSTEP_VK_DEVICE
}

}  // namespace lockstep::vulkan
