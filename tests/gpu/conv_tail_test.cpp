// Tail steps of the tensor-core conv's store (tc::TailStep, conv_tc.cu's fuse_tail): the epilogue
// steps after the fused residual Add — HiFi-GAN's stage end, + the other resblocks' sum, / 3,
// LeakyRelu — applied in the conv's own store instead of a separate epilogue kernel. Checked
// against the float64 reference, against the epilogue kernel's bits (LOCKSTEP_CUDA_CONV_TC_TAIL=0),
// and by the launches a graph run makes.
#include <gtest/gtest.h>

#ifdef LOCKSTEP_HAVE_CUDA

#include <string>
#include <vector>

#include "backends/cuda/testing.h"
#include "gpu/gpu_test_util.h"
#include "support/graph_check.h"

namespace lockstep::gpu_test {
namespace {

using ir::Op;

constexpr int64_t kT = 4096, kK = 5;

// y = Conv(x) + bias with `steps` as its epilogue (operands: x, s [1,c,T], per-channel g [1,c,1],
// the scalar 3), c channels.
struct TailCase {
  ir::Graph g;
  std::vector<Tensor> inputs;
};
TailCase stage_end(int64_t c, const std::vector<std::string>& steps) {
  TailCase tc;
  ir::Graph& g = tc.g;
  test::GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {1, c, kT}), s = b.value("s", {1, c, kT}), y = b.value("y", {1, c, kT});
  const ir::ValueId w = b.value("w", {c, c, kK}, random_tensor({c, c, kK}, 61, DType::Float32, -0.1f, 0.1f));
  const ir::ValueId bias = b.value("bias", {c}, random_tensor({c}, 62));
  const ir::ValueId gain = b.value("gain", {1, c, 1}, random_tensor({1, c, 1}, 63, DType::Float32, 0.5f, 1.5f));
  const ir::ValueId three = b.value("three", {}, Tensor::from_vector<float>({}, {3.0f}));
  g.inputs = {x, s};
  g.outputs = {y};
  ir::Node conv = b.node(Op::Conv, "conv", {x, w, bias}, y);
  conv.attrs.set("dilations", std::vector<int64_t>{3});
  conv.attrs.set("pads", std::vector<int64_t>{6, 6});
  for (const std::string& step : steps) {
    if (step == "+x") conv.epilogue.push_back({Op::Add, x, false, 0.0f, step});
    else if (step == "s+") conv.epilogue.push_back({Op::Add, s, true, 0.0f, step});
    else if (step == "/3") conv.epilogue.push_back({Op::Div, three, false, 0.0f, step});
    else if (step == "g-") conv.epilogue.push_back({Op::Sub, gain, true, 0.0f, step});
    else if (step == "*g") conv.epilogue.push_back({Op::Mul, gain, false, 0.0f, step});
    else if (step == "leaky") conv.epilogue.push_back({Op::LeakyRelu, ir::kNoValue, false, 0.1f, step});
    else if (step == "relu") conv.epilogue.push_back({Op::Relu, ir::kNoValue, false, 0.0f, step});
    else if (step == "tanh") conv.epilogue.push_back({Op::Tanh, ir::kNoValue, false, 0.0f, step});
  }
  g.nodes = {conv};
  tc.inputs = {random_tensor({1, c, kT}, 64), random_tensor({1, c, kT}, 65)};
  return tc;
}

// `saved`: the launches the tail saves (the epilogue kernel, when every step fits the store).
void expect_tail(int64_t c, const std::vector<std::string>& steps, int saved, const std::string& what) {
  const TailCase t = stage_end(c, steps);
  auto fused = cuda::backend().compile(t.g, Options{});
  const Tensor got = fused->run(t.inputs)[0];
  EXPECT_LE(cpu_test::diff(got, reference::evaluate(t.g, t.inputs)[0]).rel_l2, kGpuRelL2) << what;
  EnvVar off("LOCKSTEP_CUDA_CONV_TC_TAIL", "0");
  auto plain = cuda::backend().compile(t.g, Options{});
  EXPECT_EQ(cuda::graph_launches(*fused), cuda::graph_launches(*plain) - saved) << what;
  EXPECT_TRUE(same_bits(got, plain->run(t.inputs)[0])) << what << ": the tail changed the bits";
  expect_cuda_matches_reference(t.g, t.inputs, c * kK, what);
}

TEST(CudaConvTail, StageEndRunsInTheConvStoreWithTheEpilogueKernelsBits) {
  LOCKSTEP_REQUIRE_GPU();
  expect_tail(32, {"+x", "s+", "/3", "leaky"}, 1, "HiFi-GAN stage end, 32 channels");
  expect_tail(64, {"+x", "s+", "/3", "leaky"}, 1, "HiFi-GAN stage end, 64 channels");
  expect_tail(64, {"+x", "s+"}, 1, "resblock sum");
  expect_tail(48, {"*g", "g-", "relu"}, 1, "no post: a per-channel Mul, a Sub with the operand on the left, Relu");
}

TEST(CudaConvTail, StepsPastTheTailStillRunInTheEpilogueKernel) {
  LOCKSTEP_REQUIRE_GPU();
  // Tanh has no tail op: it and what follows stay in the epilogue kernel, one launch either way.
  expect_tail(32, {"+x", "s+", "tanh", "/3"}, 0, "a Tanh after the second Add");
  // Four steps after the Add: three in the tail, the fourth in the epilogue kernel.
  expect_tail(32, {"+x", "s+", "/3", "*g", "leaky"}, 0, "more steps than the tail holds");
}

}  // namespace
}  // namespace lockstep::gpu_test

#endif  // LOCKSTEP_HAVE_CUDA
