#include "backends/cpu/isa.h"

#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

namespace lockstep::cpu {

Isa detected_isa() {
#if defined(__x86_64__) || defined(_M_X64)
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
    return Isa::Portable;
  }();
  return isa;
#elif defined(__aarch64__)
  return Isa::Neon;
#else
  return Isa::Portable;
#endif
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Neon: return "neon";
    default: return "portable";
  }
}

std::optional<Isa> parse_isa(const std::string& name) {
  if (name == "avx512") return Isa::Avx512;
  if (name == "avx2") return Isa::Avx2;
  if (name == "neon") return Isa::Neon;
  if (name == "portable") return Isa::Portable;
  return std::nullopt;
}

bool isa_has_fma_vectors(Isa isa) { return isa != Isa::Portable; }

bool host_has_avx2() { return active_isa() == Isa::Avx2 || active_isa() == Isa::Avx512; }

namespace {

// x86 levels and NEON do not compare: a cap from the other architecture leaves only Portable.
bool same_family(Isa a, Isa b) {
  auto x86 = [](Isa i) { return i == Isa::Avx2 || i == Isa::Avx512; };
  return a == Isa::Portable || b == Isa::Portable || x86(a) == x86(b);
}

}  // namespace

void cap_onednn(Isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) return;
  const dnnl::cpu_isa cap = isa == Isa::Avx512 ? dnnl::cpu_isa::all
                            : isa == Isa::Avx2 ? dnnl::cpu_isa::avx2
                                               : dnnl::cpu_isa::sse41;
  if (cap == dnnl::cpu_isa::all) return;
  try {
    dnnl::set_max_cpu_isa(cap);
  } catch (const dnnl::error&) {
    // oneDNN took its ISA already (a primitive exists); the cap can only be set before that.
    std::fprintf(stderr, "lockstep: LOCKSTEP_CPU_ISA could not cap oneDNN (set before first use)\n");
  }
#else
  (void)isa;
#endif
}

void bound_onednn_primitive_cache() {
  // Each executable owns its primitives; oneDNN's process-wide cache (1024 by default) only adds a
  // copy per shape, and a voice meets new shapes on every call: without a smaller bound, resident
  // memory grew by ~0.5 GB over 300 calls of random lengths (bench_model --churn).
  if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") || std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY")) return;
  dnnl::set_primitive_cache_capacity(kOnednnPrimitiveCacheCapacity);
}

Isa active_isa() {
  static const Isa isa = [] {
    const Isa host = detected_isa();
    Isa use = host;
    if (const char* env = std::getenv("LOCKSTEP_CPU_ISA"); env && *env) {
      const std::optional<Isa> want = parse_isa(env);
      if (!want)
        std::fprintf(stderr, "lockstep: LOCKSTEP_CPU_ISA=%s is not one of avx512, avx2, neon, portable; using %s\n",
                     env, isa_name(host));
      else if (!same_family(*want, host) || *want > host)
        std::fprintf(stderr, "lockstep: LOCKSTEP_CPU_ISA=%s is not available on this processor (%s); using %s\n", env,
                     isa_name(host), isa_name(host));
      else
        use = *want;
    }
    cap_onednn(use);
    bound_onednn_primitive_cache();
    return use;
  }();
  return isa;
}

}  // namespace lockstep::cpu
