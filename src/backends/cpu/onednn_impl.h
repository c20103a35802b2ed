// oneDNN names the implementation it picked (primitive_desc::impl_info_str()). Its reference
// ones ("ref:any", "gemm:ref", ...) are plain loops, 20-400x slower than its JIT kernels
// (issue 20: 27-392 ms against 0.13-1.4 ms per conv); lockstep runs its own kernels instead.
#pragma once

#include <string>

namespace lockstep::cpu {

inline bool is_reference_impl(const std::string& impl) {
  return impl.rfind("ref", 0) == 0 || impl.find("gemm:ref") != std::string::npos ||
         impl.find(":ref") != std::string::npos;
}

}  // namespace lockstep::cpu
