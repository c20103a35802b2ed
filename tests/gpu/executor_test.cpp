// The cuda executor: fused epilogues, run-to-run and compile-order determinism, taps, safe mode's
// canaries, and clear errors for out-of-memory and a missing device.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cuda/testing.h"
#include "gpu/gpu_test_util.h"

#ifdef LOCKSTEP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace lockstep::gpu_test {
namespace {

ir::Attributes conv_attrs() {
  ir::Attributes a;
  a.set("pads", std::vector<int64_t>{2, 2});
  return a;
}

// Conv [1,c,t] k5 with bias, then a 14-step epilogue (more than one fused kernel's 12 steps)
// using per-channel, mask, same-shape and scalar operands, on both sides.
ir::Graph conv_epilogue_graph(int64_t c, int64_t t, uint32_t seed) {
  std::vector<In> in{{random_tensor({1, c, t}, seed), true}, {random_tensor({c, c, 5}, seed + 1), false},
                     {random_tensor({c}, seed + 2), false}};
  ir::Graph g = node_graph(ir::Op::Conv, in, conv_attrs());
  auto add_value = [&](const std::string& name, Tensor t, bool runtime) {
    ir::Value v;
    v.name = name;
    v.dtype = t.dtype();
    v.shape = t.shape();
    if (!runtime) v.constant = t;
    ir::ValueId id = g.add_value(std::move(v));
    if (runtime) g.inputs.push_back(id);
    return id;
  };
  ir::ValueId mask = add_value("mask", random_tensor({1, 1, t}, seed + 3, DType::Float32, 0, 1), true);
  ir::ValueId per_channel = add_value("per_channel", random_tensor({1, c, 1}, seed + 4), false);
  ir::ValueId same = add_value("same", random_tensor({1, c, t}, seed + 5), false);
  ir::ValueId scalar = add_value("scalar", Tensor::scalar<float>(0.75f), false);
  using ir::Op;
  const std::vector<std::tuple<Op, ir::ValueId, bool>> steps = {
      {Op::Add, per_channel, false}, {Op::Tanh, ir::kNoValue, false}, {Op::Mul, mask, true},
      {Op::Sub, same, true},         {Op::LeakyRelu, ir::kNoValue, false}, {Op::Mul, scalar, false},
      {Op::Sigmoid, ir::kNoValue, false}, {Op::Div, per_channel, false}, {Op::Add, same, false},
      {Op::Relu, ir::kNoValue, false},    {Op::Add, scalar, true},        {Op::Sqrt, ir::kNoValue, false},
      {Op::Neg, ir::kNoValue, false},     {Op::Exp, ir::kNoValue, false}};
  int k = 0;
  for (auto [op, operand, lhs] : steps) {
    ir::EpilogueStep s;
    s.op = op;
    s.operand = operand;
    s.operand_is_lhs = lhs;
    s.alpha = 0.2f;
    s.onnx_name = "step" + std::to_string(k++);
    g.nodes[0].epilogue.push_back(s);
  }
  return g;
}

std::vector<Tensor> conv_epilogue_inputs(int64_t c, int64_t t, uint32_t seed) {
  return {random_tensor({1, c, t}, seed), random_tensor({1, 1, t}, seed + 3, DType::Float32, 0, 1)};
}

TEST(CudaExecutor, FusedEpilogueMatchesReference) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = conv_epilogue_graph(6, 77, 10);
  expect_cuda_matches_reference(g, conv_epilogue_inputs(6, 77, 10), 30, "conv + 14-step epilogue");
}

TEST(CudaExecutor, HundredRunsBitIdenticalAndTapsChangeNothing) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = conv_epilogue_graph(16, 1000, 3);
  auto inputs = conv_epilogue_inputs(16, 1000, 3);
  auto exe = cuda::backend().compile(g, Options{});
  const Tensor first = exe->run(inputs)[0];
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(same_bits(first, exe->run(inputs)[0])) << "run " << i;
  int taps = 0;
  RunOptions tapped;
  tapped.tap = [&](const ir::Node&, int, const Tensor& v) {
    ++taps;
    EXPECT_TRUE(same_bits(first, v));
  };
  EXPECT_TRUE(same_bits(first, exe->run(inputs, tapped)[0]));
  EXPECT_EQ(taps, 1);
  EXPECT_TRUE(same_bits(first, exe->run(inputs)[0])) << "graph replay after a tapped run";
}

#ifdef LOCKSTEP_HAVE_CUDA
bool pinned(const Tensor& t) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, t.raw()) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

// Graph runs hand each output out in a pinned buffer of the executable's pool (no host copy):
// up to 8 held at once per output, then plain copies; each result its own storage, valid after
// the executable is gone, and the bits of LOCKSTEP_CUDA_PINNED_OUTPUTS=0's staged copies.
TEST(CudaExecutor, OutputsInPinnedBuffersOutliveRunsAndTheExecutable) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = conv_epilogue_graph(16, 1000, 5);
  const auto inputs = conv_epilogue_inputs(16, 1000, 5);
  setenv("LOCKSTEP_CUDA_PINNED_OUTPUTS", "0", 1);
  const Tensor staged = cuda::backend().compile(g, Options{})->run(inputs)[0];
  unsetenv("LOCKSTEP_CUDA_PINNED_OUTPUTS");
  EXPECT_FALSE(pinned(staged));
  auto exe = cuda::backend().compile(g, Options{});
  std::vector<Tensor> held;
  for (int i = 0; i < 12; ++i) held.push_back(exe->run(inputs)[0]);
  for (int i = 0; i < 12; ++i) {
    EXPECT_TRUE(same_bits(held[i], staged)) << "run " << i;
    EXPECT_EQ(pinned(held[i]), i < 8) << "run " << i << ": the pool holds 8 buffers per output";
    for (int j = 0; j < i; ++j) EXPECT_NE(held[i].raw(), held[j].raw()) << "runs " << j << " and " << i << " share storage";
  }
  held[0].data<float>()[0] += 1.0f;  // a caller's write stays in its own tensor
  EXPECT_TRUE(same_bits(held[1], staged));
  held.erase(held.begin() + 1, held.begin() + 4);  // three buffers back to the pool
  const Tensor reused = exe->run(inputs)[0];
  EXPECT_TRUE(pinned(reused));
  EXPECT_TRUE(same_bits(reused, staged));
  exe.reset();  // the outputs' buffers outlive their executable
  EXPECT_TRUE(same_bits(reused, staged));
  EXPECT_TRUE(same_bits(held[5], staged));
}
#endif  // LOCKSTEP_HAVE_CUDA

TEST(CudaExecutor, CompileABCAGivesIdenticalBits) {
  LOCKSTEP_REQUIRE_GPU();
  // Same node names ("Conv_0", "step*"), different shapes.
  ir::Graph a = conv_epilogue_graph(8, 300, 1), b = conv_epilogue_graph(4, 129, 2), c = conv_epilogue_graph(24, 64, 3);
  auto exe_a = cuda::backend().compile(a, Options{});
  const Tensor first = exe_a->run(conv_epilogue_inputs(8, 300, 1))[0];
  auto exe_b = cuda::backend().compile(b, Options{});
  exe_b->run(conv_epilogue_inputs(4, 129, 2));
  auto exe_c = cuda::backend().compile(c, Options{});
  exe_c->run(conv_epilogue_inputs(24, 64, 3));
  exe_a.reset();
  auto again = cuda::backend().compile(a, Options{});
  EXPECT_TRUE(same_bits(first, again->run(conv_epilogue_inputs(8, 300, 1))[0]));
}

// Large constants have one device copy per host storage (executor.cpp): graphs that share a
// weight's storage share its copy, and a new weight at a dead one's address gets its own.
TEST(CudaExecutor, SharedConstantsFollowTheirHostStorage) {
  LOCKSTEP_REQUIRE_GPU();
  const int64_t c = 64, t = 200;  // the weight: 64 x 64 x 5 floats, 80 KiB (shared from 64 KiB)
  for (uint32_t seed : {11u, 12u, 13u}) {  // each graph dies before the next: its weight's address is free again
    ir::Graph g = conv_epilogue_graph(c, t, seed);
    const auto inputs = conv_epilogue_inputs(c, t, seed);
    const std::vector<Tensor> want = reference::evaluate(g, inputs);
    auto first = cuda::backend().compile(g, Options{});
    auto second = cuda::backend().compile(g, Options{});  // same storage: the same device copy
    cpu_test::expect_outputs_match(first->run(inputs), want, 5 * c, "seed " + std::to_string(seed), kGpuRelL2, kGpuAbsPerTerm);
    first.reset();
    cpu_test::expect_outputs_match(second->run(inputs), want, 5 * c, "seed " + std::to_string(seed) + ", after the first died",
                                   kGpuRelL2, kGpuAbsPerTerm);
  }
}

TEST(CudaExecutor, SafeModeCatchesPlantedOutOfBoundsWrite) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = conv_epilogue_graph(4, 50, 7);
  Options safe;
  safe.safe = true;
  auto exe = cuda::backend().compile(g, safe);
  auto inputs = conv_epilogue_inputs(4, 50, 7);
  exe->run(inputs);  // clean before the plant
  cuda::plant_out_of_bounds_write(*exe, "Conv_0");
  try {
    exe->run(inputs);
    FAIL() << "safe mode did not catch the planted out-of-bounds write";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    const std::string what = e.what();
    EXPECT_NE(what.find("test_planted_out_of_bounds_write"), std::string::npos) << what;
    EXPECT_NE(what.find("step13"), std::string::npos) << "names the ONNX node: " << what;
    EXPECT_NE(what.find("after value 'out0'"), std::string::npos) << what;
  }
}

TEST(CudaExecutor, InputsAreChecked) {
  LOCKSTEP_REQUIRE_GPU();
  ir::Graph g = conv_epilogue_graph(4, 50, 7);
  auto exe = cuda::backend().compile(g, Options{});
  auto inputs = conv_epilogue_inputs(4, 50, 7);
  try {
    exe->run({inputs[0]});
    FAIL();
  } catch (const Error& e) { EXPECT_EQ(e.code(), ErrorCode::MissingInput); }
  try {
    exe->run({random_tensor({1, 4, 51}, 1), inputs[1]});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_NE(std::string(e.what()).find("in0"), std::string::npos) << e.what();
  }
  try {
    exe->run({random_tensor({1, 4, 50}, 1, DType::Int64), inputs[1]});
    FAIL();
  } catch (const Error& e) { EXPECT_EQ(e.code(), ErrorCode::DTypeMismatch); }
}

TEST(CudaExecutor, OutOfMemoryIsAnError) {
  LOCKSTEP_REQUIRE_GPU();
  // 2^38 floats = 1 TiB, far beyond any GPU.
  ir::Graph g;
  ir::Value x;
  x.name = "x";
  x.shape = {int64_t{1} << 38};
  ir::Value y = x;
  y.name = "y";
  ir::ValueId xi = g.add_value(x), yi = g.add_value(y);
  ir::Node n;
  n.op = ir::Op::Relu;
  n.name = "huge";
  n.inputs = {xi};
  n.outputs = {yi};
  g.nodes.push_back(n);
  g.inputs = {xi};
  g.outputs = {yi};
  try {
    cuda::backend().compile(g, Options{});
    FAIL() << "a 2 TiB arena compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
  }
}

// Runs where there is NO device (the development machine, CI): a clear error, not a crash.
TEST(CudaExecutor, MissingDeviceIsDeviceUnavailable) {
  std::string why;
  if (cuda::backend().available(&why)) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(why.empty());
  ir::Graph g = conv_epilogue_graph(4, 50, 7);
  try {
    cuda::backend().compile(g, Options{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DeviceUnavailable) << e.what();
  }
}

}  // namespace
}  // namespace lockstep::gpu_test
