// Shared helpers of the GPU tests: skip without a device, find the shared models, run a graph on
// the cuda backend against the float64 reference.
#pragma once

#include "support/paths.h"
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cuda/backend.h"

namespace lockstep::gpu_test {

// The CPU tests' graph builders, shared by the GPU tests.
using cpu_test::attrs;
using cpu_test::In;
using cpu_test::node_graph;
using cpu_test::random_tensor;
using cpu_test::runtime_inputs;

// float32 on the GPU against float64: cuDNN/cuBLAS sum in another order than the CPU, so the
// bars are a little wider than the CPU tests' (still float32 rounding, far from TF32's 1e-3).
inline constexpr double kGpuRelL2 = 2e-6;
inline constexpr double kGpuAbsPerTerm = 4e-7;
// Shared models: DESIGN.md's bars.
inline constexpr double kModelRelL2 = 1e-5;
inline constexpr double kModelCosine = 0.9999999;

#define LOCKSTEP_REQUIRE_GPU()                                                 \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::lockstep::cuda::backend().available(&why_))                         \
      GTEST_SKIP() << "no CUDA device: " << why_;                              \
  } while (0)

// LOCKSTEP_MODELS_DIR, else ../shared/models beside the source tree; "" when neither exists.
inline std::string models_dir() {
  if (const char* env = std::getenv("LOCKSTEP_MODELS_DIR"); env && *env && std::filesystem::exists(env)) return env;
  const std::string shared = lockstep_test::source_dir() + "/../shared/models";
  if (std::filesystem::exists(shared)) return shared;
  return "";
}

// Sets an environment variable for the scope (the backend reads its switches at compile time).
struct EnvVar {
  EnvVar(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvVar() { unsetenv(name_); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
  const char* name_;
};

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

inline void expect_cuda_matches_reference(const ir::Graph& g, const std::vector<Tensor>& inputs, int64_t terms = 1,
                                          const std::string& what = "") {
  auto exe = cuda::backend().compile(g, Options{});
  std::vector<Tensor> got = exe->run(inputs);
  cpu_test::expect_outputs_match(got, reference::evaluate(g, inputs), terms, what, kGpuRelL2, kGpuAbsPerTerm);
  if (::testing::Test::HasFatalFailure()) return;
  // Safe mode runs the same kernels: same bits, and no canary broken.
  Options safe;
  safe.safe = true;
  auto checked = cuda::backend().compile(g, safe);
  std::vector<Tensor> again = checked->run(inputs);
  for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(same_bits(got[o], again[o])) << what << ": safe mode changed the bits";
}

}  // namespace lockstep::gpu_test
