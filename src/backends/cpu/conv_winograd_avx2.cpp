// The Winograd kernels built for AVX2+FMA (x86-64 only: CMake compiles this file there alone).
#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/conv_winograd_isa.h"
#include "backends/cpu/conv_winograd_transforms.h"
#include "backends/cpu/simd/target.h"

LOCKSTEP_TARGET_AVX2_BEGIN
#include "backends/cpu/simd/vec_avx2.h"
#include "backends/cpu/conv_winograd_kernels.h"
LOCKSTEP_TARGET_END

namespace lockstep::cpu::winograd {

const WinogradKernels& avx2_kernels() {
  static const WinogradKernels kernels = make_kernels<simd::Avx2>("avx2");
  return kernels;
}

}  // namespace lockstep::cpu::winograd
