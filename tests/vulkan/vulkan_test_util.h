// Shared helpers of the Vulkan tests: skip visibly without a device, run a graph on the vulkan
// backend against the float64 reference with named tolerances, compare bits.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "backends/cpu/cpu_test_util.h"
#include "backends/vulkan/backend.h"

namespace lockstep::vulkan_test {

using cpu_test::attrs;
using cpu_test::In;
using cpu_test::node_graph;
using cpu_test::random_tensor;
using cpu_test::runtime_inputs;

// float32 kernels against float64: the CPU tests' bars (each sum runs in a fixed order from zero,
// one rounding per add and per multiply: no fused multiply-adds).
inline constexpr double kVulkanRelL2 = 1e-6;
inline constexpr double kVulkanAbsPerTerm = 2e-7;
// The error bounds shaders/math.glsl states, in float32 ulps of the float64 value (math_test.cpp).
inline constexpr double kExpUlps = 1.0;
inline constexpr double kTanhUlps = 1.5;
inline constexpr double kSigmoidUlps = 2.5;
inline constexpr double kErfAbs = 4.5e-7;   // and kErfUlps where |erf| >= 1e-3 (the cpu's: 4.7e-7, 8 ulp)
inline constexpr double kErfUlps = 8.0;
inline constexpr double kSoftplusUlps = 3.5;
inline constexpr double kCorrectlyRoundedUlps = 0.5 + 1e-3;  // div_rn, sqrt_rn in [2^-40, 2^40]
// Shared models and the embedded default: DESIGN.md's bars.
inline constexpr double kModelRelL2 = 1e-5;
inline constexpr double kModelCosine = 0.9999999;

#define LOCKSTEP_REQUIRE_VULKAN()                                            \
  do {                                                                       \
    std::string why_;                                                        \
    if (!::lockstep::vulkan::backend().available(&why_))                     \
      GTEST_SKIP() << "no Vulkan device: " << why_;                          \
  } while (0)

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Runs `g` on vulkan and on the reference, checks every output; a second run and a safe-mode run
// (own slots, NaN-filled, canaries checked after every dispatch) give the same bits.
inline void expect_vulkan_matches_reference(const ir::Graph& g, const std::vector<Tensor>& inputs, int64_t terms = 1,
                                            const std::string& what = "") {
  auto exe = vulkan::backend().compile(g, Options{});
  const std::vector<Tensor> got = exe->run(inputs);
  cpu_test::expect_outputs_match(got, reference::evaluate(g, inputs), terms, what, kVulkanRelL2, kVulkanAbsPerTerm);
  const std::vector<Tensor> again = exe->run(inputs);
  for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(same_bits(got[o], again[o])) << what << ": a second run changed the bits";
  Options safe;
  safe.safe = true;
  const std::vector<Tensor> checked = vulkan::backend().compile(g, safe)->run(inputs);
  for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(same_bits(got[o], checked[o])) << what << ": safe mode changed the bits";
}

}  // namespace lockstep::vulkan_test
