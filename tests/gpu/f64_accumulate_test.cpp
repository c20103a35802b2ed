// Options::f64_accumulate on cuda (conv_f64.cu): the chosen Conv and MatMul nodes sit at float32's
// one rounding of the float64 reference (float32 accumulation is 6-10x further on these sums), the
// node outside the prefix keeps its float32 bars, and the bits are the same run to run, after a
// fresh compile and in safe mode. Skips without a GPU. Not yet run: no GPU was lent when it was
// written (LOCKSTEP_CUDA_F64=1 turns the path on until it has been).
#include <gtest/gtest.h>

#include <iostream>

#include "diff/metrics.h"
#include "gpu/gpu_test_util.h"
#include "support/text_encoder.h"

namespace lockstep::gpu_test {
namespace {

using test::kOneRoundingRelL2;

TEST(CudaF64Accumulate, ChosenConvsAndMatMulsRoundOnce) {
  LOCKSTEP_REQUIRE_GPU();
  EnvVar opt_in("LOCKSTEP_CUDA_F64", "1");  // cuda's f64 path is opt-in until measured on a GPU
  uint32_t seed = 2200;
  for (int64_t t : {1, 7, 130, 345}) {
    const ir::Graph g = test::text_encoder_products(t, seed += 10);
    const std::vector<Tensor> inputs = {cpu_test::random_tensor({1, 192, t}, seed)};
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    const std::string at = "t " + std::to_string(t);
    Options o;
    o.f64_accumulate = std::vector<std::string>{"/enc/"};
    std::vector<Tensor> got = cuda::backend().compile(g, o)->run(inputs);
    const double scores = diff::compare(got[0], want[0]).rel_l2;
    EXPECT_LE(scores, kOneRoundingRelL2) << at << ": the scores (and the two convs before them)";
    cpu_test::expect_outputs_match({got[1]}, {want[1]}, 192, at + ": /dec/conv in float32", kGpuRelL2, kGpuAbsPerTerm);
    Options f32 = o;
    f32.f64_accumulate = std::vector<std::string>{};
    const double plain = diff::compare(cuda::backend().compile(g, f32)->run(inputs)[0], want[0]).rel_l2;
    std::cout << "[   NOTE   ] " << at << ": scores rel L2 from float64 " << scores << " accumulated in float64, " << plain
              << " in float32\n";
    auto exe = cuda::backend().compile(g, o);
    std::vector<Tensor> again = exe->run(inputs), third = exe->run(inputs);
    Options safe = o;
    safe.safe = true;
    std::vector<Tensor> checked = cuda::backend().compile(g, safe)->run(inputs);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(same_bits(got[i], again[i])) << at << ": a fresh compile changed output " << i;
      EXPECT_TRUE(same_bits(again[i], third[i])) << at << ": run to run, output " << i;
      EXPECT_TRUE(same_bits(got[i], checked[i])) << at << ": safe mode changed output " << i;
    }
  }
}

}  // namespace
}  // namespace lockstep::gpu_test
