// The Winograd kernels built for AVX-512F (x86-64 only: CMake compiles this file there alone).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/conv_winograd_isa.h"
#include "backends/cpu/conv_winograd_transforms.h"
#include "backends/cpu/simd/target.h"

LOCKSTEP_TARGET_AVX512_BEGIN
#include "backends/cpu/simd/vec_avx512.h"
#include "backends/cpu/conv_winograd_kernels.h"
LOCKSTEP_TARGET_END

namespace lockstep::cpu::winograd {

const WinogradKernels& avx512_kernels() {
  static const WinogradKernels kernels = make_kernels<simd::Avx512>("avx512");
  return kernels;
}

}  // namespace lockstep::cpu::winograd
