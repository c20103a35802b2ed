// The backends lockstep knows, in a fixed order.
#include "backends/cpu/backend.h"
#include "backends/cuda/backend.h"
#include "backends/vulkan/backend.h"
#include "lockstep/lockstep.h"
#include "reference/evaluate.h"

namespace lockstep {

std::vector<const Backend*> all_backends() {
  return {&reference::backend(), &cpu::backend(), &cuda::backend(), &vulkan::backend()};
}

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

}  // namespace lockstep
