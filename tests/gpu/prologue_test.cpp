// Prologue fusion on the CUDA backend (PrologueFusion, device.h): in graph replay a tensor-core
// Conv reads its LeakyRelu producer's input and applies the LeakyRelu itself (by default at most
// 32 output channels; LOCKSTEP_CUDA_FUSE_PROLOGUE=1: every eligible conv), and an elementwise
// kernel applies a unary producer of one of its operands as it reads (the WN gate's Tanh; on by
// default, LOCKSTEP_CUDA_FUSE_OPERAND=0 turns it off); the producer's kernel is skipped, eager
// runs (taps) keep both kernels. Checked against the float64 reference, against the unfused bits,
// and for the cases that must not fuse.
#include <gtest/gtest.h>

#ifdef LOCKSTEP_HAVE_CUDA

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backends/cuda/testing.h"
#include "gpu/gpu_test_util.h"
#include "passes/pipeline.h"
#include "support/graph_check.h"

namespace lockstep::gpu_test {
namespace {

using ir::Op;

constexpr int64_t kC = 64, kT = 2048, kK = 7;

// HiFi-GAN's resblock step with c channels: a = LeakyRelu(x, 0.1); y = Conv(a) + bias + x. With
// `second_reader`, a is also a graph output (then the LeakyRelu must run: no fusion).
ir::Graph resblock(bool second_reader, int64_t c = kC) {
  ir::Graph g;
  test::GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {1, c, kT}), a = b.value("a", {1, c, kT}), y = b.value("y", {1, c, kT});
  const ir::ValueId w = b.value("w", {c, c, kK}, random_tensor({c, c, kK}, 41, DType::Float32, -0.1f, 0.1f));
  const ir::ValueId bias = b.value("bias", {c}, random_tensor({c}, 42));
  g.inputs = {x};
  g.outputs = second_reader ? std::vector<ir::ValueId>{y, a} : std::vector<ir::ValueId>{y};
  ir::Node leaky = b.node(Op::LeakyRelu, "leaky", {x}, a);
  leaky.attrs.set("alpha", 0.1f);
  ir::Node conv = b.node(Op::Conv, "conv", {a, w, bias}, y);
  conv.attrs.set("dilations", std::vector<int64_t>{3});
  conv.attrs.set("pads", std::vector<int64_t>{9, 9});
  conv.epilogue = {ir::EpilogueStep{Op::Add, x, true, 0.0f, "residual"}};
  g.nodes = {leaky, conv};
  return g;
}

// Compiles with the prologue fusion on for every eligible conv.
std::unique_ptr<Executable> compile_with_prologue_fusion(const ir::Graph& g) {
  setenv("LOCKSTEP_CUDA_FUSE_PROLOGUE", "1", 1);
  auto exe = cuda::backend().compile(g, Options{});
  unsetenv("LOCKSTEP_CUDA_FUSE_PROLOGUE");
  return exe;
}

TEST(CudaPrologue, LeakyReluFusedIntoTheConvMatchesReferenceAndUnfusedBits) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = resblock(false);
  const std::vector<Tensor> inputs = {random_tensor({1, kC, kT}, 43)};
  auto fused = compile_with_prologue_fusion(g);
  EXPECT_EQ(cuda::prologues_fused(*fused), 1);
  const Tensor got = fused->run(inputs)[0];
  const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
  EXPECT_TRUE(d.finite);
  EXPECT_LE(d.rel_l2, kGpuRelL2);
  auto plain = cuda::backend().compile(g, Options{});  // the default at 64 output channels: not fused
  EXPECT_EQ(cuda::prologues_fused(*plain), 0);
  EXPECT_TRUE(same_bits(got, plain->run(inputs)[0])) << "the fused prologue changed the bits";
  // Eager (tapped) runs keep the LeakyRelu kernel: its value is tapped and matches float64, and
  // the output has the graph run's bits.
  Tensor tapped_a;
  RunOptions tap;
  tap.tap = [&](const ir::Node& node, int, const Tensor& value) {
    if (node.name == "leaky") tapped_a = value.clone();
  };
  const Tensor eager = fused->run(inputs, tap)[0];
  EXPECT_TRUE(same_bits(got, eager)) << "eager and graph runs differ";
  ASSERT_TRUE(tapped_a.defined()) << "the LeakyRelu node was not tapped";
  ir::Graph just_leaky = g;
  just_leaky.outputs = {just_leaky.nodes[0].outputs[0]};
  just_leaky.nodes.resize(1);
  EXPECT_LE(cpu_test::diff(tapped_a, reference::evaluate(just_leaky, inputs)[0]).rel_l2, kGpuRelL2);
  expect_cuda_matches_reference(g, inputs, kC * kK, "leaky + conv + residual");
}

// At most 32 output channels (one output tile) the prologue is fused by default; =0 turns it off.
TEST(CudaPrologue, SmallConvFusesByDefaultWithTheSameBits) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = resblock(false, 32);
  const std::vector<Tensor> inputs = {random_tensor({1, 32, kT}, 47)};
  auto fused = cuda::backend().compile(g, Options{});
  EXPECT_EQ(cuda::prologues_fused(*fused), 1);
  const Tensor got = fused->run(inputs)[0];
  EXPECT_LE(cpu_test::diff(got, reference::evaluate(g, inputs)[0]).rel_l2, kGpuRelL2);
  setenv("LOCKSTEP_CUDA_FUSE_PROLOGUE", "0", 1);
  auto plain = cuda::backend().compile(g, Options{});
  unsetenv("LOCKSTEP_CUDA_FUSE_PROLOGUE");
  EXPECT_EQ(cuda::prologues_fused(*plain), 0);
  EXPECT_TRUE(same_bits(got, plain->run(inputs)[0])) << "the fused prologue changed the bits";
  RunOptions tap;  // eager: the LeakyRelu kernel runs
  tap.tap = [](const ir::Node&, int, const Tensor&) {};
  EXPECT_TRUE(same_bits(got, fused->run(inputs, tap)[0])) << "eager and graph runs differ";
}

// HiFi-GAN's stage: one LeakyRelu of the upsampler's output feeds three resblocks' first convs
// (dilations 1, 3, 5), each adding the upsampler's output back. `wide` channels for the second
// conv: above 32 output channels it does not take the prologue by default.
ir::Graph shared_leaky_stage(int64_t wide) {
  ir::Graph g;
  test::GraphBuilder b(g);
  constexpr int64_t c = 32;
  const ir::ValueId x = b.value("x", {1, c, kT}), a = b.value("a", {1, c, kT});
  g.inputs = {x};
  ir::Node leaky = b.node(Op::LeakyRelu, "leaky", {x}, a);
  leaky.attrs.set("alpha", 0.1f);
  g.nodes = {leaky};
  for (int r = 0; r < 3; ++r) {
    const int64_t co = r == 1 ? wide : c, d = 2 * r + 1;
    const std::string id = std::to_string(r);
    const ir::ValueId w = b.value("w" + id, {co, c, kK}, random_tensor({co, c, kK}, 60 + r, DType::Float32, -0.1f, 0.1f));
    const ir::ValueId y = b.value("y" + id, {1, co, kT});
    ir::Node conv = b.node(Op::Conv, "conv" + id, {a, w}, y);
    conv.attrs.set("dilations", std::vector<int64_t>{d});
    conv.attrs.set("pads", std::vector<int64_t>{3 * d, 3 * d});
    if (co == c) conv.epilogue = {ir::EpilogueStep{Op::Add, x, true, 0.0f, "residual" + id}};
    g.nodes.push_back(conv);
    g.outputs.push_back(y);
  }
  return g;
}

TEST(CudaPrologue, LeakyReluReadByThreeConvsIsAppliedByEachWithTheSameBits) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = shared_leaky_stage(32);
  const std::vector<Tensor> inputs = {random_tensor({1, 32, kT}, 66)};
  auto fused = cuda::backend().compile(g, Options{});
  EXPECT_EQ(cuda::prologues_fused(*fused), 3);
  const std::vector<Tensor> got = fused->run(inputs);
  cpu_test::expect_outputs_match(got, reference::evaluate(g, inputs), 32 * kK, "shared leaky", kGpuRelL2, kGpuAbsPerTerm);
  std::vector<Tensor> plain;
  {
    EnvVar off("LOCKSTEP_CUDA_FUSE_PROLOGUE", "0");
    auto exe = cuda::backend().compile(g, Options{});
    EXPECT_EQ(cuda::prologues_fused(*exe), 0);
    plain = exe->run(inputs);
  }
  RunOptions tap;  // eager: the LeakyRelu kernel runs
  tap.tap = [](const ir::Node&, int, const Tensor&) {};
  const std::vector<Tensor> eager = fused->run(inputs, tap);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(same_bits(got[i], plain[i])) << "output " << i << ": the shared prologue changed the bits";
    EXPECT_TRUE(same_bits(got[i], eager[i])) << "output " << i << ": eager and graph runs differ";
  }
  // One reader that keeps reading the LeakyRelu's output (64 channels out): the kernel must run,
  // so no reader applies it.
  const ir::Graph mixed = shared_leaky_stage(64);
  auto partial = cuda::backend().compile(mixed, Options{});
  EXPECT_EQ(cuda::prologues_fused(*partial), 0);
  cpu_test::expect_outputs_match(partial->run(inputs), reference::evaluate(mixed, inputs), 32 * kK, "shared leaky, one wide reader",
                                 kGpuRelL2, kGpuAbsPerTerm);
}

TEST(CudaPrologue, ProducerWithAnotherReaderIsNotFused) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = resblock(true);
  const std::vector<Tensor> inputs = {random_tensor({1, kC, kT}, 44)};
  auto exe = compile_with_prologue_fusion(g);
  EXPECT_EQ(cuda::prologues_fused(*exe), 0);
  expect_cuda_matches_reference(g, inputs, kC * kK, "leaky (also an output) + conv");
}

// The WaveNet gate of the VITS flows, m = Tanh(x[:, :C]) * Sigmoid(x[:, C:]), after the compile
// pipeline (fuse_epilogues puts the Mul into the Sigmoid's epilogue). With `tanh_is_output`, the
// Tanh value is also a graph output (then the Tanh must run: no fusion).
ir::Graph wn_gate(bool tanh_is_output) {
  ir::Graph g;
  test::GraphBuilder b(g);
  const ir::ValueId x = b.value("x", {1, 2 * kC, kT}), a = b.value("a", {1, kC, kT}), s = b.value("s", {1, kC, kT});
  const ir::ValueId ta = b.value("ta", {1, kC, kT}), ts = b.value("ts", {1, kC, kT}), m = b.value("m", {1, kC, kT});
  const ir::ValueId axes = b.ints("axes", {1}), c0 = b.ints("c0", {0}), c1 = b.ints("c1", {kC}), c2 = b.ints("c2", {2 * kC});
  for (auto& v : g.values)
    if (v.constant.defined()) v.dtype = v.constant.dtype();
  g.inputs = {x};
  g.outputs = tanh_is_output ? std::vector<ir::ValueId>{m, ta} : std::vector<ir::ValueId>{m};
  g.nodes = {b.node(Op::Slice, "slice_a", {x, c0, c1, axes}, a), b.node(Op::Slice, "slice_s", {x, c1, c2, axes}, s),
             b.node(Op::Tanh, "tanh", {a}, ta), b.node(Op::Sigmoid, "sigmoid", {s}, ts), b.node(Op::Mul, "gate_mul", {ta, ts}, m)};
  passes::run_pipeline(g, {});
  const bool fused = std::any_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node& n) {
    return n.op == Op::Sigmoid && n.epilogue.size() == 1 && n.epilogue[0].op == Op::Mul;
  });
  EXPECT_TRUE(fused) << "fuse_epilogues did not put the gate's Mul into the Sigmoid";
  return g;
}

TEST(CudaPrologue, TanhFusedIntoTheGateMulMatchesReferenceAndUnfusedBits) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = wn_gate(false);
  const std::vector<Tensor> inputs = {random_tensor({1, 2 * kC, kT}, 45, DType::Float32, -4.0f, 4.0f)};
  auto fused = cuda::backend().compile(g, Options{});  // on by default
  EXPECT_EQ(cuda::prologues_fused(*fused), 1);
  const Tensor got = fused->run(inputs)[0];
  const cpu_test::Diff d = cpu_test::diff(got, reference::evaluate(g, inputs)[0]);
  EXPECT_TRUE(d.finite);
  EXPECT_LE(d.rel_l2, kGpuRelL2);
  setenv("LOCKSTEP_CUDA_FUSE_OPERAND", "0", 1);
  auto plain = cuda::backend().compile(g, Options{});
  unsetenv("LOCKSTEP_CUDA_FUSE_OPERAND");
  EXPECT_EQ(cuda::prologues_fused(*plain), 0);
  EXPECT_TRUE(same_bits(got, plain->run(inputs)[0])) << "the fused Tanh changed the bits";
  // Eager (tapped) runs keep the Tanh kernel: its value is tapped, the output has the graph run's bits.
  Tensor tapped;
  RunOptions tap;
  tap.tap = [&](const ir::Node& node, int, const Tensor& value) {
    if (node.name == "tanh") tapped = value.clone();
  };
  EXPECT_TRUE(same_bits(got, fused->run(inputs, tap)[0])) << "eager and graph runs differ";
  ASSERT_TRUE(tapped.defined()) << "the Tanh node was not tapped";
  expect_cuda_matches_reference(g, inputs, 1, "WN gate");
}

TEST(CudaPrologue, GateTanhThatIsAlsoAnOutputIsNotFused) {
  LOCKSTEP_REQUIRE_GPU();
  const ir::Graph g = wn_gate(true);
  const std::vector<Tensor> inputs = {random_tensor({1, 2 * kC, kT}, 46, DType::Float32, -4.0f, 4.0f)};
  auto exe = cuda::backend().compile(g, Options{});
  EXPECT_EQ(cuda::prologues_fused(*exe), 0);
  expect_cuda_matches_reference(g, inputs, 1, "WN gate, Tanh also an output");
}

}  // namespace
}  // namespace lockstep::gpu_test

#endif  // LOCKSTEP_HAVE_CUDA
