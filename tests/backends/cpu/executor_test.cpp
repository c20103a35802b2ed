// The cpu Executable: fused epilogues, determinism, taps, a stable arena, input checks.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/cpu/cpu_test_util.h"
#include "backends/cpu/executor.h"

namespace lockstep::cpu_test {
namespace {

using ir::Op;

// Conv [1,8,40] -> epilogue: + per-channel bias [8,1], * mask [1,1,40], tanh, + residual input,
// leaky relu; then a standalone Mul carrying a Sigmoid epilogue.
ir::Graph fused_graph() {
  ir::Graph g;
  auto value = [&](std::string name, Shape shape, Tensor c = {}) {
    ir::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.constant = std::move(c);
    return g.add_value(std::move(v));
  };
  ir::ValueId x = value("x", {1, 8, 40}), mask = value("mask", {1, 1, 40});
  g.inputs = {x, mask};
  ir::ValueId w = value("w", {8, 8, 3}, random_tensor({8, 8, 3}, 1));
  ir::ValueId b = value("b", {8, 1}, random_tensor({8, 1}, 2));
  ir::ValueId y = value("y", {1, 8, 40}), z = value("z", {1, 8, 40});
  ir::Node conv;
  conv.op = Op::Conv;
  conv.name = "conv";
  conv.inputs = {x, w};
  conv.outputs = {y};
  conv.attrs.set("pads", std::vector<int64_t>{1, 1});
  conv.epilogue = {{Op::Add, b, false, 0, "add_b"},       {Op::Mul, mask, true, 0, "mul_mask"},
                   {Op::Tanh, ir::kNoValue, false, 0, "tanh"}, {Op::Sub, x, true, 0, "sub_res"},
                   {Op::LeakyRelu, ir::kNoValue, false, 0.2f, "lrelu"}};
  ir::Node mul;
  mul.op = Op::Mul;
  mul.name = "mul";
  mul.inputs = {y, mask};
  mul.outputs = {z};
  mul.epilogue = {{Op::Sigmoid, ir::kNoValue, false, 0, "sig"}, {Op::Div, b, false, 0, "div_b"}};
  g.nodes = {conv, mul};
  g.outputs = {z, y};
  return g;
}

std::vector<Tensor> fused_inputs() {
  Tensor mask = random_tensor({1, 1, 40}, 3);
  for (int i = 0; i < 40; ++i) mask.data<float>()[i] = i < 31 ? 1.0f : 0.0f;
  return {random_tensor({1, 8, 40}, 4), mask};
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(CpuExecutor, FusedEpiloguesMatchReference) {
  expect_matches_reference(fused_graph(), fused_inputs(), 24, "fused conv + mul");
}

TEST(CpuExecutor, SameBitsAcrossRunsAndCompiles) {
  ir::Graph g = fused_graph();
  for (int threads : {1, 2, 3}) {
    Options o;
    o.threads = threads;
    auto a = cpu::backend().compile(g, o);
    auto b = cpu::backend().compile(g, o);
    auto r1 = a->run(fused_inputs()), r2 = a->run(fused_inputs()), r3 = b->run(fused_inputs());
    for (size_t i = 0; i < r1.size(); ++i) {
      EXPECT_TRUE(same_bits(r1[i], r2[i])) << "threads " << threads;
      EXPECT_TRUE(same_bits(r1[i], r3[i])) << "threads " << threads;
    }
  }
}

TEST(CpuExecutor, TapsSeeEveryNodeAndChangeNothing) {
  ir::Graph g = fused_graph();
  auto exe = cpu::backend().compile(g, Options{});
  auto plain = exe->run(fused_inputs());
  std::vector<std::string> seen;
  Tensor conv_tap;
  RunOptions ro;
  ro.tap = [&](const ir::Node& node, int out, const Tensor& v) {
    seen.push_back(node.name + ":" + std::to_string(out));
    if (node.name == "conv") conv_tap = v;
  };
  auto tapped = exe->run(fused_inputs(), ro);
  EXPECT_EQ(seen, (std::vector<std::string>{"conv:0", "mul:0"}));
  EXPECT_TRUE(same_bits(conv_tap, plain[1]));  // the tap is the value after the epilogue
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(same_bits(plain[i], tapped[i]));
}

TEST(CpuExecutor, ArenaIsStableAcrossRuns) {
  auto exe = cpu::backend().compile(fused_graph(), Options{});
  const void* arena = cpu::arena_address(*exe);
  ASSERT_NE(arena, nullptr);
  for (int i = 0; i < 3; ++i) exe->run(fused_inputs());
  EXPECT_EQ(arena, cpu::arena_address(*exe));
}

TEST(CpuExecutor, UsesTheMemoryPlan) {
  // Two values planned at the same offset (y dead once z is computed is not true here, so plan
  // z after y): the executor must honour offsets and arena size.
  ir::Graph g = fused_graph();
  g.outputs = {g.nodes[1].outputs[0]};
  ir::MemoryPlan plan;
  plan.offsets.assign(g.values.size(), -1);
  plan.sizes.assign(g.values.size(), 0);
  int64_t at = 0;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].constant.defined()) continue;
    plan.offsets[v] = at;
    plan.sizes[v] = num_elements(g.values[v].shape) * 4;
    at += (plan.sizes[v] + 63) / 64 * 64;
  }
  plan.arena_bytes = at;
  g.plan = plan;
  expect_matches_reference(g, fused_inputs(), 24, "planned");
}

TEST(CpuExecutor, RejectsBadInputs) {
  auto exe = cpu::backend().compile(fused_graph(), Options{});
  auto in = fused_inputs();
  try {
    exe->run({in[0]});
    FAIL() << "missing input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::MissingInput);
    EXPECT_NE(e.message().find("mask"), std::string::npos) << e.message();
  }
  try {
    exe->run({in[0].to(DType::Float64), in[1]});
    FAIL() << "float64 input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::DTypeMismatch);
    EXPECT_NE(e.message().find("expected float32, got float64"), std::string::npos) << e.message();
  }
  try {
    exe->run({random_tensor({1, 8, 41}, 1), in[1]});
    FAIL() << "wrong shape accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_NE(e.message().find("[1,8,40]"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("[1,8,41]"), std::string::npos) << e.message();
  }
}

TEST(CpuExecutor, Float64IsUnsupportedWithAReason) {
  std::vector<In> in{{random_tensor({4}, 1, DType::Float64), true}};
  ir::Graph g = node_graph(Op::Relu, in);
  auto why = cpu::backend().unsupported_reason(g, g.nodes[0]);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("float64"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::cpu_test
