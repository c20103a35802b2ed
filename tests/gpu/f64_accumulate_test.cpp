// Options::f64_accumulate on cuda (conv_f64.cu): the chosen Conv and MatMul nodes sit at float32's
// one rounding of the float64 reference (float32 accumulation is 6-10x further on these sums), the
// node outside the prefix keeps its float32 bars, and the bits are the same run to run, after a
// fresh compile and in safe mode. Skips without a GPU (passed on an H100, 2026-12-06).
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
  EnvVar on("LOCKSTEP_CUDA_F64", "1");  // whatever the environment says (0 turns the path off)
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

// The decoder's upsamplers (convt1d_f64_kernel): a group-1 1-D ConvTranspose named by the prefix
// rounds once (the tensor-core phases it replaces hold operands to 3xTF32), the same bits run to run.
TEST(CudaF64Accumulate, ChosenConvTransposeRoundsOnce) {
  LOCKSTEP_REQUIRE_GPU();
  EnvVar on("LOCKSTEP_CUDA_F64", "1");
  struct TCase {
    int cin, cout, t, k, s, pad;
  };
  // The joe voice's ups.0 (k16 s8), ups.2 (k4 s2) shapes at odd lengths; one with no taps past the ends.
  const TCase cases[] = {{512, 256, 37, 16, 8, 4}, {128, 64, 1201, 4, 2, 1}, {64, 32, 5, 3, 3, 0}};
  uint32_t seed = 2600;
  for (const TCase& c : cases) {
    std::vector<In> in = {{cpu_test::random_tensor({1, c.cin, c.t}, seed += 10), true},
                          {cpu_test::random_tensor({c.cin, c.cout, c.k}, seed + 1, DType::Float32, -0.2f, 0.2f), false},
                          {cpu_test::random_tensor({c.cout}, seed + 2), false}};
    ir::Attributes a;
    a.set("strides", std::vector<int64_t>{c.s});
    a.set("pads", std::vector<int64_t>{c.pad, c.pad});
    const ir::Graph g = node_graph(ir::Op::ConvTranspose, in, a);
    const std::vector<Tensor> inputs = runtime_inputs(in);
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    const std::string at = "convT c" + std::to_string(c.cin) + " T" + std::to_string(c.t) + " k" + std::to_string(c.k);
    Options o;
    o.f64_accumulate = std::vector<std::string>{"ConvTranspose"};
    auto exe = cuda::backend().compile(g, o);
    const std::vector<Tensor> got = exe->run(inputs), again = exe->run(inputs);
    const double f64 = diff::compare(got[0], want[0]).rel_l2;
    EXPECT_LE(f64, kOneRoundingRelL2) << at;
    EXPECT_TRUE(same_bits(got[0], again[0])) << at << ": run to run";
    Options f32 = o;
    f32.f64_accumulate = std::vector<std::string>{};
    const double plain = diff::compare(cuda::backend().compile(g, f32)->run(inputs)[0], want[0]).rel_l2;
    std::cout << "[   NOTE   ] " << at << ": rel L2 from float64 " << f64 << " in float64, " << plain << " in float32\n";
  }
}

}  // namespace
}  // namespace lockstep::gpu_test
