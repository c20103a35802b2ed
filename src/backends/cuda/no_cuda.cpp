// Stands in for the CUDA backend when lockstep is built without nvcc.
#include "backends/cuda/backend.h"
#include "backends/cuda/testing.h"

namespace lockstep::cuda {
namespace {
class NoCudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  bool available(std::string* why_not) const override {
    if (why_not) *why_not = "lockstep was built without CUDA (nvcc was not found at configure time)";
    return false;
  }
  std::optional<std::string> unsupported_reason(const ir::Graph&, const ir::Node&) const override {
    return "lockstep was built without CUDA";
  }
  std::unique_ptr<Executable> compile(const ir::Graph&, const Options&) const override {
    throw Error(ErrorCode::DeviceUnavailable, "lockstep was built without CUDA");
  }
};
}  // namespace
const Backend& backend() {
  static NoCudaBackend instance;
  return instance;
}
void plant_out_of_bounds_write(Executable&, const std::string&) {
  throw Error(ErrorCode::DeviceUnavailable, "lockstep was built without CUDA");
}
}  // namespace lockstep::cuda
