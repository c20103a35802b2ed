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

// Not a reference loop, but far behind lockstep's GEMM convolution on a 1-D conv: an SSE4.1
// kernel on a CPU with AVX2 (oneDNN 2.6 has no AVX2 channels-last conv; 3.5-22 GFLOP/s against
// 17-62 for the GEMM conv at 8-32 channels), or oneDNN's im2col GEMM (1.5 GFLOP/s on an
// 8-channel k7 channels-last conv, against 17.5) (bench/RESULTS.md, lockstep_conv_bench).
inline bool is_slow_conv1d_impl(const std::string& impl, bool host_has_avx2) {
  return is_reference_impl(impl) || impl.find("gemm:jit") != std::string::npos ||
         (host_has_avx2 && impl.find("sse41") != std::string::npos);
}

}  // namespace lockstep::cpu
