// The GEMM convolution (conv_gemm.h): what make_conv_kernel hands it without asking oneDNN
// (pointwise convs between planar values), against the float64 reference at 1 and 2 threads,
// and its transposed weights shared across lengths of the same conv.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/cpu_test_util.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// Planar pointwise convs (the voice's text-encoder attention projections) go straight to the
// GEMM kernel on every ISA, with and without bias, batch 1 and 2, grouped.
TEST(CpuConvGemm, PlanarPointwiseConvsRunTheGemmKernelAndMatchTheReference) {
  struct Case {
    int64_t n, ci, co, w, group;
    bool bias;
  };
  const Case cases[] = {{1, 192, 192, 17, 1, true}, {2, 24, 40, 33, 1, false}, {1, 32, 16, 9, 4, true}};
  uint32_t seed = 4700;
  for (const Case& c : cases) {
    const Tensor x = random_tensor({c.n, c.ci, c.w}, seed++);
    std::vector<In> in{{x}, {random_tensor({c.co, c.ci / c.group, 1}, seed++, DType::Float32, -0.3f, 0.3f), false}};
    if (c.bias) in.push_back({random_tensor({c.co}, seed++), false});
    ir::Attributes a;
    a.set("group", c.group);
    const ir::Graph g = node_graph(Op::Conv, in, a);
    const std::vector<Tensor> want = reference::evaluate(g, {x});
    for (int threads : {1, 2}) {
      const std::string what = "ci " + std::to_string(c.ci) + " co " + std::to_string(c.co) + " group " +
                               std::to_string(c.group) + " threads " + std::to_string(threads);
      Options o;
      o.threads = threads;
      const auto exe = cpu::backend().compile(g, o);
      ASSERT_EQ(exe->kernel_implementations().size(), 1u);
      EXPECT_EQ(exe->kernel_implementations()[0].rfind("lockstep:gemm-conv", 0), 0u)
          << what << ": " << exe->kernel_implementations()[0];
      expect_outputs_match(exe->run({x}), want, c.ci / c.group + 1, what, kCpuRelL2, kCpuAbsPerTerm);
    }
  }
}

// Another length of the same weights reads them no more: the transposed copy is shared while
// some kernel holds it, with the same bits as a kernel made from the pointer.
TEST(CpuConvGemm, CallerMadeWeightsAreReadOncePerKeyWhileAlive) {
  const Tensor w = random_tensor({24, 16, 3}, 4801, DType::Float32, -0.3f, 0.3f);
  int reads = 0;
  auto weights = [&] {
    ++reads;
    return w.data<float>();
  };
  const std::string key = "test/caller-made/" + std::to_string(reinterpret_cast<uintptr_t>(&reads));
  auto shape = [](int64_t width) {
    return cpu::GemmConv1dShape{.n = 1, .ci = 16, .co = 24, .w_in = width, .w_out = width, .k = 3, .pad_begin = 1};
  };
  const cpu::GemmConv1d first(shape(40), weights, nullptr, key, 2);
  const cpu::GemmConv1d second(shape(71), weights, nullptr, key, 2);
  EXPECT_EQ(reads, 1) << "a second length of the same weights transposed them again";
  const Tensor x = random_tensor({1, 16, 71}, 4802);
  std::vector<float> got(24 * 71), want(got.size());
  std::vector<std::byte> scratch(second.scratch_bytes());
  second.run(x.data<float>(), got.data(), scratch.data());
  const cpu::GemmConv1d by_pointer(shape(71), w.data<float>(), nullptr, 2);
  std::vector<std::byte> scratch2(by_pointer.scratch_bytes());
  by_pointer.run(x.data<float>(), want.data(), scratch2.data());
  EXPECT_TRUE(got == want) << "the shared weights differ from the pointer constructor's";
}

}  // namespace
}  // namespace lockstep::cpu_test
