// Stands in for the Vulkan backend when lockstep is built without the Vulkan headers or glslc.
#include "backends/vulkan/backend.h"
#include "backends/vulkan/testing.h"

namespace lockstep::vulkan {
namespace {
constexpr const char* kWhy = "lockstep was built without Vulkan (the Vulkan headers or glslc were not found at configure time)";
class NoVulkanBackend final : public Backend {
 public:
  std::string name() const override { return "vulkan"; }
  bool available(std::string* why_not) const override {
    if (why_not) *why_not = kWhy;
    return false;
  }
  std::optional<std::string> unsupported_reason(const ir::Graph&, const ir::Node&) const override { return kWhy; }
  std::unique_ptr<Executable> compile(const ir::Graph&, const Options&) const override {
    throw Error(ErrorCode::DeviceUnavailable, kWhy);
  }
};
}  // namespace
const Backend& backend() {
  static NoVulkanBackend instance;
  return instance;
}
std::string device_description() { return kWhy; }
void plant_out_of_bounds_write(Executable&, const std::string&) { throw Error(ErrorCode::DeviceUnavailable, kWhy); }
}  // namespace lockstep::vulkan
