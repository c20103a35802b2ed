// Options::f64_accumulate (conv_f64.h, MatMul): the chosen Conv and MatMul nodes accumulate in
// float64 and round once, so they sit at float32's rounding of the float64 reference, not at
// float32 accumulation's error; planar and channels-last operands, pads, dilation, bias, an
// epilogue, lengths across the 128-position blocks; the same bits at any thread count; nodes
// outside the prefixes keep float32; a Piper voice's default names its text encoder.
#include <gtest/gtest.h>

#include <iostream>

#include "api/f64_default.h"
#include "backends/cpu/cpu_test_util.h"
#include "diff/metrics.h"
#include "support/graph_check.h"
#include "support/text_encoder.h"
#include "voices/piper.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

using test::kOneRoundingRelL2;

TEST(CpuF64Accumulate, ChosenConvsAndMatMulsRoundOnceWithTheSameBitsAtAnyThreadCount) {
  uint32_t seed = 1200;
  for (int64_t t : {1, 7, 130, 300}) {
    const ir::Graph g = test::text_encoder_products(t, seed += 10);
    const std::vector<Tensor> inputs = {random_tensor({1, 192, t}, seed)};
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    std::vector<Tensor> first;
    for (int threads : {1, 2, 3}) {
      const std::string at = "t " + std::to_string(t) + " threads " + std::to_string(threads);
      Options o;
      o.threads = threads;
      o.f64_accumulate = std::vector<std::string>{"/enc/"};
      auto exe = cpu::backend().compile(g, o);
      const std::vector<std::string> impl = exe->kernel_implementations();
      int f64_kernels = 0;
      for (const std::string& name : impl) f64_kernels += name.rfind("lockstep:f64-", 0) == 0;
      EXPECT_EQ(f64_kernels, 3) << at << ": conv_a, conv_b and the scores in float64, /dec/conv not";
      std::vector<Tensor> got = exe->run(inputs);
      const double scores = diff::compare(got[0], want[0]).rel_l2;
      EXPECT_LE(scores, kOneRoundingRelL2) << at << ": the scores (and the two convs before them)";
      expect_outputs_match({got[1]}, {want[1]}, 192 + 24, at + ": /dec/conv in float32", kCpuRelL2, kCpuAbsPerTerm);
      if (first.empty()) first = got;
      else
        EXPECT_TRUE(test::same_bits(first, got)) << at << ": bits differ from 1 thread";
      if (threads == 2) {
        Options f32 = o;
        f32.f64_accumulate = std::vector<std::string>{};
        const double plain = diff::compare(cpu::backend().compile(g, f32)->run(inputs)[0], want[0]).rel_l2;
        std::cout << "[   NOTE   ] t " << t << ": scores rel L2 from float64 " << scores << " accumulated in float64, "
                  << plain << " in float32\n";
      }
    }
  }
}

TEST(CpuF64Accumulate, APiperVoiceDefaultsToItsTextEncoder) {
  ir::Graph voice;
  test::GraphBuilder b(voice);
  voice.inputs = {b.value("input", {1, 5}), b.value("input_lengths", {1}), b.value("scales", {3})};
  voice.values[static_cast<size_t>(voice.inputs[0])].dtype = DType::Int64;
  voice.values[static_cast<size_t>(voice.inputs[1])].dtype = DType::Int64;
  ASSERT_TRUE(voices::is_piper_voice(voice)) << "the stand-in should look like a voice";
  EXPECT_EQ(default_f64_accumulate(voice), std::vector<std::string>{"/enc_p/"});
  EXPECT_EQ(default_f64_accumulate_for(voice, "cuda"), (std::vector<std::string>{"/enc_p/", "/flow/"})) << "cuda: its flows too";
  Options none;
  none.f64_accumulate = std::vector<std::string>{};
  EXPECT_TRUE(resolve_f64_accumulate(voice, none).empty()) << "an explicit empty list turns it off";
  EXPECT_TRUE(default_f64_accumulate(test::text_encoder_products(4, 1)).empty()) << "other models: float32 unless asked";
}

}  // namespace
}  // namespace lockstep::cpu_test
