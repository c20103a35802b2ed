// Compiles the functions between LOCKSTEP_TARGET_*_BEGIN and LOCKSTEP_TARGET_END for one x86
// instruction set, so one source file can hold an AVX2 or AVX-512 kernel next to generic code.
// Include every standard header before BEGIN: functions defined inside the region (and only
// those) get the target, so no inline library function is ever built for a wider ISA.
#pragma once

#if defined(__clang__)
#define LOCKSTEP_TARGET_AVX2_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define LOCKSTEP_TARGET_AVX512_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx2,fma\"))), apply_to = function)")
#define LOCKSTEP_TARGET_END _Pragma("clang attribute pop")
#else
#define LOCKSTEP_TARGET_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define LOCKSTEP_TARGET_AVX512_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx2,fma\")")
#define LOCKSTEP_TARGET_END _Pragma("GCC pop_options")
#endif

// One function built for x86-64-v4, x86-64-v3 and baseline, picked at load time (GCC/clang
// target_clones), for loops the compiler vectorizes itself. Elsewhere (arm64: NEON is baseline)
// a plain function.
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__ELF__)  // Mach-O has no ifunc
#define LOCKSTEP_X86_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LOCKSTEP_X86_CLONES
#endif
