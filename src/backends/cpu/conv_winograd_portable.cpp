// The Winograd kernels without x86 intrinsics: NEON on arm64, plain lanes elsewhere, and the
// table dispatch over every ISA built here.
#include "backends/cpu/simd/vec_portable.h"
#include "backends/cpu/conv_winograd_kernels.h"

namespace lockstep::cpu::winograd {

#if defined(__x86_64__) || defined(_M_X64)
const WinogradKernels& avx512_kernels();  // conv_winograd_avx512.cpp
const WinogradKernels& avx2_kernels();    // conv_winograd_avx2.cpp
#endif

const WinogradKernels& winograd_kernels(Isa isa) {
  static const WinogradKernels portable = make_kernels<simd::Portable>("portable");
  switch (isa) {
#if defined(__x86_64__) || defined(_M_X64)
    case Isa::Avx512: return avx512_kernels();
    case Isa::Avx2: return avx2_kernels();
#endif
#if defined(__aarch64__)
    case Isa::Neon: {
      static const WinogradKernels neon = make_kernels<simd::Neon>("neon");
      return neon;
    }
#endif
    default: return portable;
  }
}

}  // namespace lockstep::cpu::winograd
