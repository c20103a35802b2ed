#include "backends/vulkan/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/vulkan/shaders.h"
#include "core/hash.h"

namespace lockstep::vulkan {

void check_vk(VkResult result, const std::string& what, const std::string& node) {
  if (result == VK_SUCCESS) return;
  const std::string message = "vulkan: " + what + ": VkResult " + std::to_string(static_cast<int>(result));
  if (result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY)
    throw Error(ErrorCode::OutOfMemory, message, node);
  if (result == VK_ERROR_DEVICE_LOST || result == VK_ERROR_INITIALIZATION_FAILED || result == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error(ErrorCode::DeviceUnavailable, message, node);
  throw Error(ErrorCode::Internal, message, node);
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// lavapipe / NVIDIA / MoltenVK by the driver id (Vulkan 1.2), else by vendor and name.
std::string driver_kind(const Device& d) {
  const Api& api = vk();
  if (d.properties.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &driver;
    api.vkGetPhysicalDeviceProperties2(d.physical, &p2);
    switch (driver.driverID) {
      case VK_DRIVER_ID_MESA_LLVMPIPE: return "lavapipe";
      case VK_DRIVER_ID_NVIDIA_PROPRIETARY: return "NVIDIA";
      case VK_DRIVER_ID_MOLTENVK: return "MoltenVK";
      default:
        if (driver.driverName[0]) return driver.driverName;
    }
  }
  if (lower(d.name).find("llvmpipe") != std::string::npos) return "lavapipe";
  if (d.properties.vendorID == 0x10DE) return "NVIDIA";
  if (d.properties.vendorID == 0x106B) return "MoltenVK";
  return "vendor 0x" + std::to_string(d.properties.vendorID);
}

int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

int compute_family(VkPhysicalDevice physical) {
  const Api& api = vk();
  uint32_t n = 0;
  api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  api.vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
  for (uint32_t i = 0; i < n; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

// Builds the device; throws Error(DeviceUnavailable) with the reason.
Device* create_device() {
  std::string why;
  if (!load_loader(&why)) throw Error(ErrorCode::DeviceUnavailable, why);
  Api& api = vk();
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (api.vkEnumerateInstanceVersion) api.vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_1)
    throw Error(ErrorCode::DeviceUnavailable, "the Vulkan loader is older than 1.1");

  // MoltenVK lists its devices only to instances that enumerate portability drivers.
  uint32_t next = 0;
  api.vkEnumerateInstanceExtensionProperties(nullptr, &next, nullptr);
  std::vector<VkExtensionProperties> instance_ext(next);
  api.vkEnumerateInstanceExtensionProperties(nullptr, &next, instance_ext.data());
  std::vector<const char*> enable;
  VkInstanceCreateFlags flags = 0;
  if (has_extension(instance_ext, "VK_KHR_portability_enumeration")) {
    enable.push_back("VK_KHR_portability_enumeration");
    flags |= 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "lockstep";
  app.apiVersion = loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.flags = flags;
  ici.pApplicationInfo = &app;
  ici.enabledExtensionCount = static_cast<uint32_t>(enable.size());
  ici.ppEnabledExtensionNames = enable.data();
  auto d = std::make_unique<Device>();
  VkResult r = api.vkCreateInstance(&ici, nullptr, &d->instance);
  if (r != VK_SUCCESS) throw Error(ErrorCode::DeviceUnavailable, "vkCreateInstance failed (VkResult " + std::to_string(r) + ")");
  load_instance(d->instance);

  uint32_t count = 0;
  api.vkEnumeratePhysicalDevices(d->instance, &count, nullptr);
  std::vector<VkPhysicalDevice> physicals(count);
  api.vkEnumeratePhysicalDevices(d->instance, &count, physicals.data());
  struct Candidate {
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    int family;
  };
  std::vector<Candidate> usable;
  std::string listed;
  for (VkPhysicalDevice p : physicals) {
    VkPhysicalDeviceProperties props;
    api.vkGetPhysicalDeviceProperties(p, &props);
    const int family = compute_family(p);
    const bool ok = family >= 0 && props.apiVersion >= VK_API_VERSION_1_1;
    listed += std::string(listed.empty() ? "" : ", ") + (ok ? std::to_string(usable.size()) + ": " : "") + props.deviceName;
    if (ok) usable.push_back({p, props, family});
    else listed += " (unusable: no compute queue or Vulkan < 1.1)";
  }
  if (usable.empty())
    throw Error(ErrorCode::DeviceUnavailable, "no Vulkan device with a compute queue" + (listed.empty() ? std::string() : " (" + listed + ")") +
                                                  "; for lavapipe install mesa-vulkan-drivers");
  const Candidate* chosen = nullptr;
  if (const char* env = std::getenv("LOCKSTEP_VULKAN_DEVICE"); env && *env) {
    const std::string want = env;
    const bool numeric = std::all_of(want.begin(), want.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
      const size_t index = std::stoul(want);
      if (index < usable.size()) chosen = &usable[index];
    } else {
      for (const Candidate& c : usable)
        if (lower(c.props.deviceName).find(lower(want)) != std::string::npos) {
          chosen = &c;
          break;
        }
    }
    if (!chosen) throw Error(ErrorCode::DeviceUnavailable, "LOCKSTEP_VULKAN_DEVICE='" + want + "' matches no usable device (" + listed + ")");
  } else {
    chosen = &*std::min_element(usable.begin(), usable.end(), [](const Candidate& a, const Candidate& b) {
      return type_rank(a.props.deviceType) < type_rank(b.props.deviceType);
    });
  }
  d->physical = chosen->physical;
  d->properties = chosen->props;
  d->queue_family = static_cast<uint32_t>(chosen->family);
  d->name = chosen->props.deviceName;
  api.vkGetPhysicalDeviceMemoryProperties(d->physical, &d->memory);
  d->driver = driver_kind(*d);

  uint32_t dext = 0;
  api.vkEnumerateDeviceExtensionProperties(d->physical, nullptr, &dext, nullptr);
  std::vector<VkExtensionProperties> device_ext(dext);
  api.vkEnumerateDeviceExtensionProperties(d->physical, nullptr, &dext, device_ext.data());
  std::vector<const char*> dev_enable;
  if (has_extension(device_ext, "VK_KHR_portability_subset")) dev_enable.push_back("VK_KHR_portability_subset");
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = d->queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(dev_enable.size());
  dci.ppEnabledExtensionNames = dev_enable.data();
  VkPhysicalDeviceFeatures has{}, features{};
  api.vkGetPhysicalDeviceFeatures(d->physical, &has);
  features.shaderInt64 = has.shaderInt64;
  features.shaderFloat64 = has.shaderFloat64;
  d->int64 = has.shaderInt64 == VK_TRUE;
  d->float64 = has.shaderFloat64 == VK_TRUE;
  dci.pEnabledFeatures = &features;
  r = api.vkCreateDevice(d->physical, &dci, nullptr, &d->device);
  if (r != VK_SUCCESS) throw Error(ErrorCode::DeviceUnavailable, "vkCreateDevice on " + d->name + " failed (VkResult " + std::to_string(r) + ")");
  load_device(d->device);
  api.vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);

  VkDescriptorSetLayoutBinding bindings[2] = {};
  for (uint32_t b = 0; b < 2; ++b) {
    bindings[b].binding = b;
    bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[b].descriptorCount = 1;
    bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sli.bindingCount = 2;
  sli.pBindings = bindings;
  check_vk(api.vkCreateDescriptorSetLayout(d->device, &sli, nullptr, &d->set_layout), "create the descriptor set layout");
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &d->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &push;
  check_vk(api.vkCreatePipelineLayout(d->device, &pli, nullptr, &d->pipeline_layout), "create the pipeline layout");
  return d.release();
}

struct Created {
  Device* device = nullptr;
  std::string why;
};

}  // namespace

Device* device(std::string* why_not) {
  if (const char* off = std::getenv("LOCKSTEP_VULKAN"); off && std::strcmp(off, "0") == 0) {
    if (why_not) *why_not = "disabled by LOCKSTEP_VULKAN=0";
    return nullptr;
  }
  // Never destroyed: Executables may outlive static destructors (Python at exit).
  static const Created created = [] {
    Created c;
    try {
      c.device = create_device();
    } catch (const Error& e) {
      c.why = e.message();
    }
    return c;
  }();
  if (!created.device && why_not) *why_not = created.why;
  return created.device;
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0) throw Error(ErrorCode::DeviceUnavailable, "vulkan: " + name + " has no memory type with flags " + std::to_string(required));
  return static_cast<uint32_t>(fallback);
}

VkPipeline Device::pipeline(const std::string& shader, const std::array<int32_t, 8>& spec) {
  const ShaderCode* code = nullptr;
  for (const ShaderCode& s : embedded_shaders())
    if (shader == s.name) code = &s;
  if (!code) throw Error(ErrorCode::Internal, "vulkan: no embedded shader '" + shader + "'");
  std::string key = sha256_hex(code->words, code->count * sizeof(uint32_t));
  for (int32_t v : spec) key += ":" + std::to_string(v);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  const Api& api = vk();
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = code->count * sizeof(uint32_t);
  smi.pCode = code->words;
  VkShaderModule module = VK_NULL_HANDLE;
  check_vk(api.vkCreateShaderModule(device, &smi, nullptr, &module), "create shader module " + shader);
  VkSpecializationMapEntry entries[8];
  for (uint32_t i = 0; i < 8; ++i) entries[i] = {i, static_cast<uint32_t>(i * sizeof(int32_t)), sizeof(int32_t)};
  const VkSpecializationInfo si{8, entries, sizeof(spec), spec.data()};
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.stage.pSpecializationInfo = &si;
  cpi.layout = pipeline_layout;
  VkPipeline p = VK_NULL_HANDLE;
  const VkResult r = api.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpi, nullptr, &p);
  api.vkDestroyShaderModule(device, module, nullptr);
  check_vk(r, "create compute pipeline " + shader);
  pipelines_[key] = p;
  return p;
}

void Device::submit(VkCommandBuffer commands, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &commands;
  std::lock_guard<std::mutex> lock(mutex_);
  check_vk(vk().vkQueueSubmit(queue, 1, &si, fence), "submit");
}

}  // namespace lockstep::vulkan
