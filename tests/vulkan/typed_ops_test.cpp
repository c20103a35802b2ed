// The int/bool, reduction, indexing and random kernels of the vulkan backend (logical.cpp,
// reduce.cpp, indexing.cpp, random.cpp) against the float64 reference (integers and bools
// exactly, floats with the named bars of vulkan_test_util.h), each also in safe mode; the random
// ops bit for bit against the cpu.
#include <gtest/gtest.h>

#include <limits>

#include "backends/cpu/backend.h"
#include "backends/vulkan/program.h"
#include "vulkan/vulkan_test_util.h"

namespace lockstep::vulkan_test {
namespace {

using ir::Op;

Tensor rnd(Shape s, uint32_t seed, DType t = DType::Float32, float lo = -1, float hi = 1) { return random_tensor(std::move(s), seed, t, lo, hi); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
Tensor i32(Shape s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(std::move(s), v); }
// Integral floats in [-3, 3]: comparisons see equal pairs.
Tensor coarse(Shape s, uint32_t seed) {
  Tensor t = rnd(std::move(s), seed, DType::Float32, -3.5f, 3.5f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i]);
  return t;
}

void check(Op op, const std::vector<In>& in, ir::Attributes a = {}, const std::string& what = "", int64_t terms = 1) {
  SCOPED_TRACE(std::string(ir::op_name(op)) + " " + what);
  const ir::Graph g = node_graph(op, in, std::move(a));
  const auto reason = vulkan::backend().unsupported_reason(g, g.nodes[0]);
  ASSERT_FALSE(reason) << *reason;
  expect_vulkan_matches_reference(g, runtime_inputs(in), terms, what);
}

TEST(VulkanTypedOps, CastBetweenEveryType) {
  LOCKSTEP_REQUIRE_VULKAN();
  Tensor f = Tensor::from_vector<float>({8}, {-2.7f, -0.5f, 0.0f, 0.4f, 1.0f, 2.5f, 3e9f, -1e-3f});
  Tensor big = i64({4}, {int64_t{1} << 40, -(int64_t{1} << 33) - 7, 123456789012345, -1});
  const std::vector<std::pair<std::string, Tensor>> sources = {
      {"float", f}, {"int32", rnd({3, 5}, 1, DType::Int32)}, {"int64", big}, {"bool", rnd({7}, 2, DType::Bool)}};
  for (const auto& [name, t] : sources)
    for (int64_t to : {1, 6, 7, 9}) {
      if (name == "float" && to != 1 && to != 9) {  // float -> int: only values in range
        check(Op::Cast, {{Tensor::from_vector<float>({5}, {-2.7f, -0.5f, 0.0f, 2.5f, 1e6f}), true}}, attrs({{"to", to}}), name);
        continue;
      }
      check(Op::Cast, {{t, true}}, attrs({{"to", to}}), name + " to " + std::to_string(to));
    }
}

TEST(VulkanTypedOps, ComparisonsAndLogic) {
  LOCKSTEP_REQUIRE_VULKAN();
  Tensor nan = Tensor::from_vector<float>({4}, {std::numeric_limits<float>::quiet_NaN(), 1.0f, 2.0f, -0.0f});
  Tensor nan_b = Tensor::from_vector<float>({4}, {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 0.0f});
  for (Op op : {Op::Equal, Op::Less, Op::LessOrEqual, Op::Greater, Op::GreaterOrEqual}) {
    check(op, {{coarse({2, 3, 4}, 1), true}, {coarse({3, 1}, 2), true}}, {}, "float broadcast");
    check(op, {{nan, true}, {nan_b, true}}, {}, "NaN and signed zero");
    check(op, {{rnd({4, 5}, 3, DType::Int32), true}, {rnd({5}, 4, DType::Int32), false}}, {}, "int32");
    check(op, {{i64({3}, {int64_t{1} << 40, -5, (int64_t{1} << 40) + 1}), true}, {i64({1}, {(int64_t{1} << 40) + 1}), true}}, {},
          "int64 past 2^32");
  }
  check(Op::Equal, {{rnd({6}, 5, DType::Bool), true}, {rnd({6}, 6, DType::Bool), true}}, {}, "bool");
  for (Op op : {Op::And, Op::Or, Op::Xor})
    check(op, {{rnd({2, 1, 5}, 7, DType::Bool), true}, {rnd({3, 1}, 8, DType::Bool), true}}, {}, "broadcast");
  check(Op::Not, {{rnd({9}, 9, DType::Bool), true}});
}

TEST(VulkanTypedOps, WhereOverEveryTypeWithThreeWayBroadcast) {
  LOCKSTEP_REQUIRE_VULKAN();
  Tensor cond = rnd({2, 1, 4}, 1, DType::Bool);
  check(Op::Where, {{cond, true}, {rnd({3, 1}, 2), true}, {rnd({4}, 3), true}}, {}, "float");
  check(Op::Where, {{cond, true}, {i64({1}, {int64_t{1} << 42}), false}, {rnd({3, 4}, 4, DType::Int64), true}}, {}, "int64");
  check(Op::Where, {{cond, true}, {rnd({3, 4}, 5, DType::Int32), true}, {rnd({4}, 6, DType::Int32), true}}, {}, "int32");
  check(Op::Where, {{cond, true}, {rnd({3, 4}, 7, DType::Bool), true}, {rnd({1}, 8, DType::Bool), true}}, {}, "bool");
}

TEST(VulkanTypedOps, IntegerArithmetic) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (DType t : {DType::Int32, DType::Int64}) {
    const std::string name = dtype_name(t);
    for (Op op : {Op::Add, Op::Sub, Op::Mul})
      check(op, {{rnd({3, 4}, 1, t, -1000, 1000), true}, {rnd({4}, 2, t, -1000, 1000), true}}, {}, name);
    Tensor den = rnd({3, 4}, 3, t, 1, 30);  // no zeros
    check(Op::Div, {{rnd({3, 4}, 4, t, -1000, 1000), true}, {den, true}}, {}, name + " truncating");
    for (Op op : {Op::Neg, Op::Abs, Op::Relu}) check(op, {{rnd({11}, 5, t, -50, 50), true}}, {}, name);
  }
  check(Op::Mul, {{i64({2}, {int64_t{1} << 31, -(int64_t{3} << 30)}), true}, {i64({1}, {12345}), false}}, {}, "int64 past 2^32");
  check(Op::Clip, {{rnd({3, 7}, 6, DType::Int64, -50, 50), true}, {i64({}, {-20}), false}, {i64({}, {(int64_t{1} << 33)}), true}}, {},
        "int64 Clip");
  check(Op::Clip, {{rnd({9}, 7, DType::Int32, -50, 50), true}, {Tensor(), false}, {i32({}, {10}), false}}, {}, "int32 Clip, no min");
  check(Op::Clip, {{rnd({9}, 8, DType::Int32, -50, 50), true}, {i32({}, {5}), true}, {i32({}, {-5}), false}}, {}, "min > max gives max");
  check(Op::Clip, {{rnd({9}, 9, DType::Int64, -50, 50), true}}, {}, "no bounds");
}

TEST(VulkanTypedOps, PowWithConstantExponents) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (float y : {2.0f, 3.0f, 0.5f, -2.0f, 0.0f, 1.0f, 7.0f})
    check(Op::Pow, {{rnd({4, 33}, 1, DType::Float32, y == 0.5f ? 0.0f : -2.0f, 2.0f), true},
                    {Tensor::from_vector<float>({1}, {y}), false}},
          {}, "exponent " + std::to_string(y));
  check(Op::Pow, {{rnd({2, 3}, 2, DType::Float32, 0.5f, 2.0f), true}, {Tensor::from_vector<float>({3}, {1.0f, 2.0f, 3.0f}), false}}, {},
        "broadcast exponent");
  const ir::Graph fused = node_graph(Op::Pow, {{rnd({3}, 3), true}, {Tensor::from_vector<float>({1}, {2.0f}), false}});
  EXPECT_EQ(vulkan::backend().compile(fused, Options{})->kernel_implementations().at(0), "vulkan:ew_program");
}

// The general Pow (pow.comp): the cpu's T(pow(double, double)) in double on the device.
TEST(VulkanTypedOps, PowWithRunTimeFractionalAndIntegerOperands) {
  LOCKSTEP_REQUIRE_VULKAN();
  check(Op::Pow, {{rnd({3, 40}, 1, DType::Float32, 0.01f, 5.0f), true}, {rnd({40}, 2, DType::Float32, -4.0f, 4.0f), true}}, {},
        "run-time exponents");
  check(Op::Pow, {{rnd({50}, 3, DType::Float32, 0.0f, 30.0f), true}, {Tensor::from_vector<float>({1}, {1.5f}), false}}, {}, "x^1.5");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor xs = Tensor::from_vector<float>({12}, {0.0f, -0.0f, 0.0f, -0.0f, inf, -inf, -inf, -2.0f, -2.0f, 1.0f, nan, 2.0f});
  Tensor ys = Tensor::from_vector<float>({12}, {-1.0f, -3.0f, 2.0f, 3.0f, -0.5f, 3.0f, -2.0f, 3.0f, 0.5f, nan, 0.0f, inf});
  check(Op::Pow, {{xs, true}, {ys, true}}, {}, "special values");
  check(Op::Pow, {{rnd({2, 5}, 4, DType::Int64, -2, 2), true}, {i64({5}, {0, 1, 2, 3, 7}), true}}, {}, "int64 ^ int64");
  check(Op::Pow, {{rnd({2, 5}, 5, DType::Int32, -2, 2), true}, {i32({1}, {5}), false}}, {}, "int32 ^ int32");
  check(Op::Pow, {{rnd({8}, 6, DType::Float32, 0.1f, 3.0f), true}, {i64({1}, {3}), false}}, {}, "float ^ int64");
  // An integral float exponent: with 2.5 the reference casts the exponent to int64 first (2^2 = 4)
  // where cpu and vulkan take pow(2, 2.5) = 5.66 and truncate (5).
  check(Op::Pow, {{i64({4}, {2, 3, 10, 7}), true}, {Tensor::from_vector<float>({1}, {3.0f}), false}}, {}, "int64 ^ float");
  // The reference's double pow (glibc's, correctly rounded) rounded to float32: the same bits here.
  const std::vector<In> in{{rnd({1 << 17}, 7, DType::Float32, 0.0f, 8.0f), true}, {rnd({1 << 17}, 8, DType::Float32, -6.0f, 6.0f), true}};
  const ir::Graph g = node_graph(Op::Pow, in);
  const Tensor got = vulkan::backend().compile(g, Options{})->run(runtime_inputs(in)).at(0).clone();
  const Tensor want = reference::evaluate(g, runtime_inputs(in)).at(0).to(DType::Float32);
  int64_t differ = 0;
  for (int64_t i = 0; i < got.numel(); ++i) differ += std::memcmp(&got.data<float>()[i], &want.data<float>()[i], 4) != 0;
  EXPECT_EQ(differ, 0) << "of 131072 run-time x^y, elements whose bits differ from the float64 pow rounded to float32";
}

TEST(VulkanTypedOps, Reductions) {
  LOCKSTEP_REQUIRE_VULKAN();
  const Shape x{2, 3, 5, 4};
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {-1}, {0, 2}, {1, 3}, {0, 1, 2, 3}};
  for (Op op : {Op::ReduceSum, Op::ReduceMean, Op::ReduceMax, Op::ReduceMin})
    for (const auto& axes : axes_sets)
      for (int64_t keep : {0, 1}) {
        const int64_t terms = op == Op::ReduceSum || op == Op::ReduceMean ? 120 : 1;
        check(op, {{rnd(x, 1), true}, {i64({static_cast<int64_t>(axes.size())}, axes), false}}, attrs({{"keepdims", keep}}),
              "axes " + std::to_string(axes.size()) + " keep " + std::to_string(keep), terms);
        check(op, {{rnd(x, 2, DType::Int64, -100, 100), true}, {i64({static_cast<int64_t>(axes.size())}, axes), false}},
              attrs({{"keepdims", keep}}), "int64");
      }
  check(Op::ReduceSum, {{rnd({3, 4}, 3), true}}, {}, "no axes: every dim", 12);
  check(Op::ReduceMean, {{rnd({1, 192, 70}, 4), true}, {i64({1}, {1}), false}}, {}, "the voice's LayerNorm mean", 192);
  check(Op::ReduceSum, {{rnd({1, 16384}, 5, DType::Float32, 0, 1), true}, {i64({1}, {1}), false}}, {}, "16384 terms (compensated)",
        16384);
  // Past llvmpipe's loop limit: two passes (chunks in order, then the chunks in order).
  check(Op::ReduceSum, {{rnd({1, 100000}, 5, DType::Float32, 0, 1), true}, {i64({1}, {1}), false}}, {}, "100000 terms, split", 100000);
  for (Op op : {Op::ReduceMean, Op::ReduceMax, Op::ReduceMin})
    check(op, {{rnd({3, 50001}, 6), true}, {i64({1}, {1}), false}}, {}, "50001 terms, split", 50001);
  check(Op::ReduceSum, {{rnd({40000, 3}, 7), true}, {i64({1}, {0}), false}}, {}, "strided, split", 40000);
  check(Op::ReduceSum, {{rnd({2, 70000}, 8, DType::Int64, -1000, 1000), true}, {i64({1}, {1}), false}}, {}, "int64, split");
  Tensor late_nan = rnd({1, 30000}, 9);
  late_nan.data<float>()[20000] = std::numeric_limits<float>::quiet_NaN();
  check(Op::ReduceMax, {{late_nan, true}, {i64({1}, {1}), false}}, {}, "NaN in a later chunk");
  Tensor nan = rnd({2, 6}, 6);
  nan.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  check(Op::ReduceMax, {{nan, true}, {i64({1}, {1}), false}}, {}, "NaN propagates");
}

TEST(VulkanTypedOps, CumSum) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1})
      for (int64_t axis : {0, 1, -1}) {
        const std::string what = "axis " + std::to_string(axis) + " exclusive " + std::to_string(exclusive) + " reverse " + std::to_string(reverse);
        check(Op::CumSum, {{rnd({3, 40, 5}, 1), true}, {i64({}, {axis}), false}}, attrs({{"exclusive", exclusive}, {"reverse", reverse}}),
              what, 40);
        check(Op::CumSum, {{rnd({3, 40, 5}, 2, DType::Int64, -1000, 1000), true}, {i64({}, {axis}), false}},
              attrs({{"exclusive", exclusive}, {"reverse", reverse}}), what + " int64");
      }
}

TEST(VulkanTypedOps, GatherFamilies) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (DType t : {DType::Float32, DType::Int64, DType::Int32, DType::Bool}) {
    const std::string name = dtype_name(t);
    Tensor data = rnd({4, 5, 3}, 1, t, -100, 100);
    check(Op::Gather, {{data, true}, {i64({2, 3}, {0, -1, 3, 2, 2, -4}), false}}, attrs({{"axis", int64_t{0}}}), name + " axis 0");
    check(Op::Gather, {{data, true}, {i32({4}, {4, 0, -2, 1}), true}}, attrs({{"axis", int64_t{1}}}), name + " axis 1 int32 run-time");
    check(Op::Gather, {{data, true}, {i64({}, {-1}), false}}, attrs({{"axis", int64_t{2}}}), name + " scalar index");
    check(Op::GatherElements, {{data, true}, {i64({4, 2, 3}, {0, 4, -1, 2, 3, 1, 0, 0, 0, 4, 4, 4, 1, 2, 3, -5, 2, 1, 3, 3, 3, 0, 1, 2}), true}},
          attrs({{"axis", int64_t{1}}}), name + " GatherElements axis 1");
    check(Op::GatherND, {{data, true}, {i64({3, 2}, {0, 1, -1, 4, 2, 2}), true}}, {}, name + " GatherND k=2");
    check(Op::GatherND, {{data, true}, {i64({4, 1}, {1, 0, 3, 2}), true}}, attrs({{"batch_dims", int64_t{1}}}), name + " GatherND batch_dims 1");
    check(Op::ScatterND, {{data, true}, {i64({3, 1}, {2, 0, 2}), true}, {rnd({3, 5, 3}, 2, t, -100, 100), true}}, {},
          name + " ScatterND repeated index: the last wins");
  }
  Tensor data = rnd({6, 4}, 3);
  check(Op::ScatterND, {{data, true}, {i64({4, 2}, {0, 1, 5, 3, 0, 1, 2, 2}), true}, {rnd({4}, 4), true}},
        attrs({{"reduction", std::string("add")}}), "ScatterND add, repeated");
  check(Op::ScatterND, {{data, true}, {i64({2, 1}, {1, 1}), true}, {rnd({2, 4}, 5), true}}, attrs({{"reduction", std::string("mul")}}),
        "ScatterND mul");
}

// A general Pow (pow.comp) takes a fused epilogue, run in place after it.
TEST(VulkanTypedOps, GeneralPowTakesAFusedEpilogue) {
  LOCKSTEP_REQUIRE_VULKAN();
  ir::Graph g;
  auto value = [&](const std::string& name, Shape shape) {
    ir::Value v;
    v.name = name;
    v.shape = std::move(shape);
    return g.add_value(std::move(v));
  };
  auto node = [&](Op op, const std::string& name, std::vector<ir::ValueId> in, ir::ValueId out) {
    ir::Node n;
    n.op = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(std::move(n));
  };
  const ir::ValueId x = value("x", {3, 20}), y = value("y", {20}), p = value("p", {3, 20}), t = value("t", {3, 20});
  g.inputs = {x, y};
  node(Op::Pow, "pow", {x, y}, p);
  node(Op::Tanh, "tanh", {p}, t);
  g.outputs = {t};
  const std::vector<Tensor> inputs{rnd({3, 20}, 1, DType::Float32, 0.1f, 2.0f), rnd({20}, 2, DType::Float32, -2.0f, 2.0f)};
  Options fused, unfused;
  unfused.fuse = false;
  const ir::Graph fg = prepare(Model::from_graph(g), fused), ug = prepare(Model::from_graph(g), unfused);
  ASSERT_EQ(fg.nodes.size(), 1u) << "the pipeline fuses Tanh into the Pow";
  const Tensor a = vulkan::backend().compile(fg, fused)->run(inputs).at(0);
  const Tensor b = vulkan::backend().compile(ug, unfused)->run(inputs).at(0);
  cpu_test::expect_outputs_match({a}, reference::evaluate(g, inputs), 1, "fused", kVulkanRelL2, kVulkanAbsPerTerm);
  EXPECT_TRUE(same_bits(a, b)) << "the fused epilogue computes what the separate kernels compute";
}

// Bad values are the cpu's errors, after the run (the device clamps and records the first bad
// element's position): out-of-range indices of every indexing op, integer division by zero. The
// executable keeps running good inputs afterwards.
TEST(VulkanTypedOps, OutOfRangeIndicesAndIntegerDivisionByZeroAreErrors) {
  LOCKSTEP_REQUIRE_VULKAN();
  struct Case {
    Op op;
    std::vector<In> in;  // input 1 is the run-time value checked
    Tensor bad;
    std::string says;
  };
  Tensor data = rnd({4, 3}, 1);
  const std::vector<Case> cases = {
      {Op::Gather, {{data, true}, {i64({3}, {0, 3, -4}), true}}, i64({3}, {0, 4, -5}), "element 1 of the indices"},
      {Op::GatherElements, {{data, true}, {i64({2, 3}, {0, 1, 2, 3, -4, 0}), true}}, i64({2, 3}, {0, 1, 2, 3, -9, 0}),
       "element 4 of the indices"},
      {Op::GatherND, {{data, true}, {i32({2, 2}, {1, 1, 2, 2}), true}}, i32({2, 2}, {1, 1, 2, 3}), "element 3 of the indices"},
      {Op::ScatterND, {{data, true}, {i64({2, 1}, {3, 0}), true}, {rnd({2, 3}, 2), false}}, i64({2, 1}, {4, 0}),
       "element 0 of the indices"},
      {Op::Div, {{i64({3}, {7, 8, 9}), false}, {i64({3}, {1, 3, 2}), true}}, i64({3}, {1, 0, 2}), "division by zero"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(ir::op_name(c.op));
    const ir::Graph g = node_graph(c.op, c.in);
    ASSERT_FALSE(vulkan::backend().unsupported_reason(g, g.nodes[0]));
    const std::vector<Tensor> good = runtime_inputs(c.in);
    std::vector<Tensor> bad = good;
    bad.back() = c.bad;  // input 1 is the last run-time input in every case
    for (bool safe : {false, true}) {
      Options o;
      o.safe = safe;
      auto exe = vulkan::backend().compile(g, o);
      try {
        exe->run(bad);
        ADD_FAILURE() << "ran with a bad value";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
        EXPECT_EQ(e.node(), g.nodes[0].name);
      }
      cpu_test::expect_outputs_match(exe->run(good), reference::evaluate(g, good), 1, "good inputs after the error", kVulkanRelL2,
                                     kVulkanAbsPerTerm);
    }
  }
}

// The noise is the cpu's, bit for bit (core/random_math.h's arithmetic in double on the device).
TEST(VulkanTypedOps, RandomIsBitIdenticalToTheCpu) {
  LOCKSTEP_REQUIRE_VULKAN();
  for (Op op : {Op::RandomNormalLike, Op::RandomUniformLike})
    for (bool seeded : {false, true}) {
      ir::Attributes a = op == Op::RandomNormalLike ? attrs({{"mean", 0.25f}, {"scale", 1.5f}}) : attrs({{"low", -2.0f}, {"high", 3.0f}});
      if (seeded) a.set("seed", 11.0f);
      const std::vector<In> in{{rnd({3, 1 << 18}, 1), true}};  // 786,432 elements
      const ir::Graph g = node_graph(op, in, a);
      ASSERT_FALSE(vulkan::backend().unsupported_reason(g, g.nodes[0]));
      auto vk = vulkan::backend().compile(g, Options{});
      auto cpu = cpu::backend().compile(g, Options{});
      for (uint64_t seed : {0ull, 7ull, 123456789ull}) {
        RunOptions r;
        r.seed = seed;
        const Tensor got = vk->run(runtime_inputs(in), r).at(0).clone();
        const Tensor want = cpu->run(runtime_inputs(in), r).at(0);
        int64_t differ = 0;
        for (int64_t i = 0; i < got.numel(); ++i) differ += std::memcmp(&got.data<float>()[i], &want.data<float>()[i], 4) != 0;
        EXPECT_EQ(differ, 0) << ir::op_name(op) << (seeded ? " seeded" : "") << " run seed " << seed << ": elements differing from the cpu";
      }
      Options safe;
      safe.safe = true;
      RunOptions r;
      r.seed = 7;
      EXPECT_TRUE(same_bits(vulkan::backend().compile(g, safe)->run(runtime_inputs(in), r).at(0), vk->run(runtime_inputs(in), r).at(0)))
          << "safe mode";
    }
}

// llvmpipe ends a shader's loops after 65535 iterations in all, silently (program.h): every serial
// walk up to kMaxSerialLoop runs exactly, one past it is refused with the reason.
TEST(VulkanLoopLimit, SerialWalksRunUpToTheLimitAndAreRefusedPastIt) {
  LOCKSTEP_REQUIRE_VULKAN();
  const int64_t k = vulkan::kMaxSerialLoop;
  check(Op::Conv, {{rnd({1, k / 4, 8}, 1), true}, {rnd({4, k / 4, 4}, 2), false}}, {}, "conv at the limit", k);
  check(Op::MatMul, {{rnd({2, k}, 3), true}, {rnd({k, 3}, 4), false}}, {}, "matmul at the limit", k);
  check(Op::Softmax, {{rnd({2, k}, 5), true}}, {}, "softmax at the limit", k);
  check(Op::CumSum, {{rnd({2, k}, 6), true}, {i64({}, {1}), false}}, {}, "cumsum at the limit", k);
  const ir::Graph graphs[] = {node_graph(Op::Conv, {{rnd({1, k / 4 + 1, 8}, 1), true}, {rnd({4, k / 4 + 1, 4}, 2), false}}),
                              node_graph(Op::MatMul, {{rnd({2, k + 1}, 3), true}, {rnd({k + 1, 3}, 4), false}}),
                              node_graph(Op::Softmax, {{rnd({2, k + 1}, 5), true}}),
                              node_graph(Op::CumSum, {{rnd({2, k + 1}, 6), true}, {i64({}, {1}), false}})};
  for (const ir::Graph& g : graphs)
    EXPECT_NE(vulkan::backend().unsupported_reason(g, g.nodes[0]).value_or("").find("loop limit"), std::string::npos)
        << ir::op_name(g.nodes[0].op);
}

}  // namespace
}  // namespace lockstep::vulkan_test
