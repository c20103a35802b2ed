// Which vector instruction set the CPU backend's own kernels use: detected once at start-up
// (CPUID on x86-64; NEON is part of every arm64 CPU) and capped by LOCKSTEP_CPU_ISA, which also
// caps oneDNN, so one variable simulates a smaller CPU for tests and A/B timing.
#pragma once

#include <optional>
#include <string>

namespace lockstep::cpu {

// Ordered within one architecture: a cap keeps the smaller of the two.
enum class Isa { Portable, Neon, Avx2, Avx512 };

// What this processor can run (Portable on architectures without a kernel of their own).
Isa detected_isa();
// What the kernels run: detected_isa() capped by LOCKSTEP_CPU_ISA (avx512|avx2|neon|portable).
// An override naming an instruction set the processor lacks is refused with an error once.
Isa active_isa();
const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(const std::string& name);
// Whether the active ISA is AVX2 or AVX-512 (oneDNN's SSE4.1 kernels are then a slow pick).
bool host_has_avx2();
// Whether `isa` has a fused multiply-add vector kernel (the Winograd and GEMM paths pay only then).
bool isa_has_fma_vectors(Isa isa);

// Caps oneDNN to the instruction set of `isa` (x86-64 only; a no-op elsewhere). Called once by
// active_isa() before any primitive exists, as oneDNN requires; ONEDNN_MAX_CPU_ISA, when set,
// wins.
void cap_onednn(Isa isa);

// oneDNN's primitive cache bound, set once by active_isa() (ONEDNN_PRIMITIVE_CACHE_CAPACITY, when
// set, wins): small, since every executable keeps its own primitives (docs/cpu.md).
inline constexpr int kOnednnPrimitiveCacheCapacity = 128;
void bound_onednn_primitive_cache();

}  // namespace lockstep::cpu
