#include "passes/plan_memory.h"

#include <gtest/gtest.h>

#include "ir/verify.h"
#include "passes/check_memory_plan.h"
#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;

bool overlaps(const ir::MemoryPlan& plan, ir::ValueId a, ir::ValueId b) {
  return plan.offsets[a] < plan.offsets[b] + plan.sizes[b] && plan.offsets[b] < plan.offsets[a] + plan.sizes[a];
}

TEST(PlanMemory, ChainReusesDeadBuffersButNeverANodesOwnInputs) {
  testing::GraphBuilder b;
  auto x = b.input("x", {16, 16});  // 1024 bytes each
  auto t = b.node(Op::Tanh, "t", {x}, {16, 16});
  auto s = b.node(Op::Sigmoid, "s", {t}, {16, 16});
  auto r = b.node(Op::Relu, "r", {s}, {16, 16});
  b.output(r);
  passes::plan_memory(b.graph());
  const auto& plan = *b.graph().plan;
  EXPECT_EQ(plan.lower_bound_bytes, 2048);  // two values live at every step
  EXPECT_EQ(plan.arena_bytes, 2048);
  EXPECT_FALSE(overlaps(plan, x, t));
  EXPECT_FALSE(overlaps(plan, t, s));
  EXPECT_FALSE(overlaps(plan, s, r));
  EXPECT_TRUE(overlaps(plan, x, s));  // x is dead once t exists
  for (auto v : {x, t, s, r}) EXPECT_EQ(plan.sizes[v], 1024);
  passes::check_memory_plan(b.graph());
  ir::verify(b.graph());
}

// A backend that writes s at t's step (an absorbed consumer) and reads x until s's step re-plans
// with those ranges: then s shares bytes with neither x nor t.
TEST(PlanMemory, LiveExtensionsKeepEarlyWritesApart) {
  testing::GraphBuilder b;
  auto x = b.input("x", {16, 16});
  auto t = b.node(Op::Tanh, "t", {x}, {16, 16});
  auto s = b.node(Op::Sigmoid, "s", {t}, {16, 16});
  auto r = b.node(Op::Relu, "r", {s}, {16, 16});
  b.output(r);
  passes::plan_memory(b.graph(), 0, {.extensions = {{x, -1, 1}, {s, 0, -1}}});
  const auto& plan = *b.graph().plan;
  EXPECT_FALSE(overlaps(plan, s, x));
  EXPECT_FALSE(overlaps(plan, s, t));
  EXPECT_EQ(plan.lower_bound_bytes, 3072);  // x, t and s live together at step 0
  passes::check_memory_plan(b.graph());
  passes::plan_memory(b.graph());  // without them, s takes x's dead bytes
  EXPECT_TRUE(overlaps(*b.graph().plan, x, s));
}

// y [1,32,16] = Relu(x); v = y[:, 16:32] by a Slice; t = Tanh(v) (then u = Sigmoid(t) when asked);
// the last value is the graph output.
struct SlicedChain {
  testing::GraphBuilder b;
  ir::ValueId x, y, v, t, u = ir::kNoValue;
};
SlicedChain sliced_chain(bool with_sigmoid) {
  SlicedChain c;
  testing::GraphBuilder& b = c.b;
  c.x = b.input("x", {1, 32, 16});
  c.y = b.node(Op::Relu, "y", {c.x}, {1, 32, 16});
  c.v = b.node(Op::Slice, "v", {c.y, b.ints("s", {16}), b.ints("e", {32}), b.ints("a", {1})}, {1, 16, 16});
  c.t = b.node(Op::Tanh, "t", {c.v}, {1, 16, 16});
  if (with_sigmoid) c.u = b.node(Op::Sigmoid, "u", {c.t}, {1, 16, 16});
  b.output(with_sigmoid ? c.u : c.t);
  return c;
}

// With v planned inside y (a backend's view, 16 * 16 floats in), y lives until Tanh reads v, so
// t never takes y's bytes.
TEST(PlanMemory, ViewAliasesTakeNoBytesAndKeepTheirValueLive) {
  SlicedChain c = sliced_chain(false);
  testing::GraphBuilder& b = c.b;
  const ir::ValueId y = c.y, v = c.v, t = c.t;
  passes::plan_memory(b.graph());
  EXPECT_TRUE(b.graph().plan->alias_of.empty());
  passes::plan_memory(b.graph(), 0, {.aliases = {{v, y, 1024}}});
  const auto& plan = *b.graph().plan;
  EXPECT_EQ(plan.alias_of[v], y);
  EXPECT_EQ(plan.alias_of[y], ir::kNoValue);
  EXPECT_EQ(plan.offsets[v], plan.offsets[y] + 1024);
  EXPECT_EQ(plan.sizes[v], 1024);
  EXPECT_FALSE(overlaps(plan, y, t));
  EXPECT_EQ(plan.lower_bound_bytes, 4096);  // x and y at step 0; y and t (3072) at step 2
  passes::check_memory_plan(b.graph());
  ir::verify(b.graph());
}

// x_new = Add(x, r) written over x (an absorbed consumer's in-place pair): one buffer for both.
TEST(PlanMemory, InPlaceAliasesShareTheirValuesBytes) {
  testing::GraphBuilder b;
  auto x = b.input("x", {16, 16});
  auto x0 = b.node(Op::Tanh, "x0", {x}, {16, 16});
  auto r = b.node(Op::Sigmoid, "r", {x}, {16, 16});
  auto x1 = b.node(Op::Add, "x1", {x0, r}, {16, 16});
  auto x2 = b.node(Op::Add, "x2", {x1, r}, {16, 16});
  b.output(x2);
  passes::plan_memory(b.graph(), 0, {.aliases = {{x1, x0, 0}, {x2, x0, 0}}});
  const auto& plan = *b.graph().plan;
  EXPECT_EQ(plan.offsets[x1], plan.offsets[x0]);
  EXPECT_EQ(plan.offsets[x2], plan.offsets[x0]);
  EXPECT_FALSE(overlaps(plan, x0, r));
  passes::check_memory_plan(b.graph());
}

TEST(PlanMemory, AliasesThatCannotHoldAreRejected) {
  SlicedChain c = sliced_chain(false);
  testing::GraphBuilder& b = c.b;
  const ir::ValueId x = c.x, y = c.y, v = c.v;
  auto expect_internal = [&](const passes::PlanAdjustments& adjust, const char* what) {
    try {
      passes::plan_memory(b.graph(), 0, adjust);
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Internal) << what;
      EXPECT_NE(std::string(e.what()).find("alias 'v'"), std::string::npos) << e.what();
    }
  };
  expect_internal({.aliases = {{v, y, 2048}}}, "past the end of y");
  expect_internal({.aliases = {{v, y, 100}}}, "unaligned");
  expect_internal({.aliases = {{y, x, 0}, {v, y, 0}}}, "an alias of an alias");
}

TEST(PlanMemory, EpilogueOperandsAndGraphOutputsStayLive) {
  testing::GraphBuilder b;
  auto x = b.input("x", {16, 16});
  auto e = b.node(Op::Exp, "e", {x}, {16, 16});       // read only by the epilogue of the last node
  auto t = b.node(Op::Tanh, "t", {x}, {16, 16});      // graph output, produced early
  auto s = b.node(Op::Sigmoid, "s", {t}, {16, 16});
  auto n = b.node(Op::Neg, "n", {s}, {16, 16});
  b.graph().nodes.back().epilogue.push_back({Op::Add, e, false, 0.0f, "add"});
  b.output(t);
  b.output(n);
  passes::plan_memory(b.graph());
  const auto& plan = *b.graph().plan;
  EXPECT_FALSE(overlaps(plan, e, s));
  EXPECT_FALSE(overlaps(plan, e, n));
  EXPECT_FALSE(overlaps(plan, t, n));
  EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
  passes::check_memory_plan(b.graph());
}

TEST(PlanMemory, SizesByDtypeConstantsUnplannedOffsetsAligned) {
  testing::GraphBuilder b;
  auto x = b.input("x", {3});
  auto w = b.filled("w", {3}, 2.0f);
  auto m = b.node(Op::Mul, "m", {x, w}, {3});
  auto sh = b.node(Op::Shape, "shape", {m}, {1}, DType::Int64);
  auto eq = b.node(Op::Equal, "eq", {x, w}, {3}, DType::Bool);
  auto f64 = b.node(Op::Tanh, "f64", {m}, {3}, DType::Float64);
  for (auto v : {sh, eq, f64}) b.output(v);
  passes::plan_memory(b.graph());
  const auto& plan = *b.graph().plan;
  EXPECT_EQ(plan.offsets[w], -1);
  EXPECT_EQ(plan.sizes[x], 12);
  EXPECT_EQ(plan.sizes[sh], 8);
  EXPECT_EQ(plan.sizes[eq], 3);
  EXPECT_EQ(plan.sizes[f64], 12);  // floating values are float32 buffers
  for (auto v : {x, m, sh, eq, f64}) EXPECT_EQ(plan.offsets[v] % 64, 0);
  passes::check_memory_plan(b.graph());
}

TEST(PlanMemory, CapOnTheArenaIsEnforced) {
  testing::GraphBuilder b;
  auto x = b.input("x", {1024});
  b.output(b.node(Op::Tanh, "t", {x}, {1024}));
  try {
    passes::plan_memory(b.graph(), 4096);
    FAIL() << "no LimitExceeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::LimitExceeded);
    EXPECT_NE(std::string(e.what()).find("planned arena needs 8192 bytes, cap is 4096"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(passes::plan_memory(b.graph(), 8192));
}

TEST(CheckMemoryPlan, CatchesCorruptedPlans) {
  testing::GraphBuilder b;
  auto x = b.input("x", {16, 16});
  auto t = b.node(Op::Tanh, "t", {x}, {16, 16});
  auto s = b.node(Op::Sigmoid, "s", {t}, {16, 16});
  b.output(s);
  passes::plan_memory(b.graph());
  passes::check_memory_plan(b.graph());

  ir::Graph aliased = b.graph();
  aliased.plan->offsets[s] = aliased.plan->offsets[t];  // output on top of its node's input
  try {
    passes::check_memory_plan(aliased);
    FAIL() << "overlap not caught";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_NE(std::string(e.what()).find("'t'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'s'"), std::string::npos) << e.what();
  }

  ir::Graph partial = b.graph();
  partial.plan->offsets[s] = partial.plan->offsets[t] + 512;  // half overlap
  EXPECT_THROW(passes::check_memory_plan(partial), Error);

  ir::Graph small = b.graph();
  small.plan->sizes[t] = 512;
  EXPECT_THROW(passes::check_memory_plan(small), Error);

  ir::Graph missing = b.graph();
  missing.plan->offsets[x] = -1;
  EXPECT_THROW(passes::check_memory_plan(missing), Error);

  ir::Graph none = b.graph();
  none.plan.reset();
  EXPECT_THROW(passes::check_memory_plan(none), Error);
}

TEST(CheckMemoryPlan, CatchesAliasesThatDoNotHold) {
  SlicedChain chain = sliced_chain(true);
  testing::GraphBuilder& b = chain.b;
  const ir::ValueId y = chain.y, v = chain.v, t = chain.t, u = chain.u;
  passes::plan_memory(b.graph(), 0, {.aliases = {{v, y, 1024}, {u, t, 0}}});
  passes::check_memory_plan(b.graph());
  auto expect_caught = [&](ir::Graph g, const char* want) {
    try {
      passes::check_memory_plan(g);
      ADD_FAILURE() << want << ": not caught";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Internal);
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  ir::Graph outside = b.graph();
  outside.plan->offsets[v] = outside.plan->offsets[y] + 2048;  // past y's end
  expect_caught(outside, "'v' lies outside");
  ir::Graph reused = b.graph();
  reused.plan->offsets[t] = reused.plan->offsets[y];  // t over y while v, inside y, is still read
  reused.plan->offsets[u] = reused.plan->offsets[t];
  expect_caught(reused, "overlaps");

  // In place while still read: b = Sigmoid(a) over a, but Exp reads a after it.
  testing::GraphBuilder c;
  auto cx = c.input("x", {16, 16});
  auto ca = c.node(Op::Tanh, "a", {cx}, {16, 16});
  auto cb = c.node(Op::Sigmoid, "b", {ca}, {16, 16});
  auto ce = c.node(Op::Exp, "e", {ca}, {16, 16});
  c.output(cb);
  c.output(ce);
  passes::plan_memory(c.graph());
  ir::Graph late = c.graph();
  late.plan->alias_of.assign(late.values.size(), ir::kNoValue);
  late.plan->alias_of[cb] = ca;
  late.plan->offsets[cb] = late.plan->offsets[ca];
  expect_caught(late, "'a' while it is still read (step 2)");
}

}  // namespace
}  // namespace lockstep
