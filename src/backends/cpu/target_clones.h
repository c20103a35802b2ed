// Function multi-versioning over the x86-64 levels (GNU ifunc, resolved at load time): on x86-64
// ELF targets only. Mach-O has no ifunc (clang rejects target_clones on macOS) and other
// architectures have no x86-64 levels, so there the one plain version is built.
#pragma once

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__ELF__)
#define LOCKSTEP_X86_64_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LOCKSTEP_X86_64_CLONES
#endif
