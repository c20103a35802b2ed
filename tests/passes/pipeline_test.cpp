#include "passes/pipeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "ir/verify.h"
#include "passes/graph_builder.h"

namespace lockstep {
namespace {

using ir::Op;

// x[1,2,T] -> Conv -> Add(0) -> Tanh -> Mul(mask) -> y, plus a dead Neg.
// Rewrites available: 1 dead node, 1 zero Add, 2 fusion steps.
constexpr int kRewrites = 4;

ir::Graph small_model() {
  testing::GraphBuilder b;
  auto x = b.input("x", {1, 2, -1});
  b.graph().value(x).dim_params = {"", "", "T"};
  auto mask = b.input("mask", {1, 1, 8});
  auto c = b.node(Op::Conv, "conv", {x, b.filled("w", {4, 2, 1}, 0.5f)}, {1, 4, 8});
  b.node(Op::Neg, "dead", {c}, {1, 4, 8});
  auto a = b.node(Op::Add, "add0", {c, b.filled("zero", {1}, 0.0f)}, {1, 4, 8});
  auto t = b.node(Op::Tanh, "tanh", {a}, {1, 4, 8});
  b.output(b.node(Op::Mul, "y", {t, mask}, {1, 4, 8}));
  return b.graph();
}

TEST(BindInputs, BindsSymbolicDimsAndRejectsWhatItCannot) {
  ir::Graph g = small_model();
  try {
    passes::bind_inputs(g, {});
    FAIL() << "unbound dim accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ShapeMismatch);
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'T'"), std::string::npos) << e.what();
  }
  try {
    passes::bind_inputs(g, {{"x", {1, 2, 8}}, {"nope", {1}}});
    FAIL() << "unknown input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(passes::bind_inputs(g, {{"x", {2, 8}}}), Error);  // rank mismatch
  passes::bind_inputs(g, {{"x", {1, 2, 8}}});
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{1, 2, 8}));
  EXPECT_EQ(g.value(g.inputs[1]).shape, (Shape{1, 1, 8}));
}

std::vector<std::string> run(ir::Graph& g, int limit) {
  passes::bind_inputs(g, {{"x", {1, 2, 8}}});
  passes::PipelineOptions options;
  options.opt_bisect_limit = limit;
  return passes::run_pipeline(g, options);
}

TEST(Pipeline, FullRunSimplifiesFusesAndPlans) {
  ir::Graph g = small_model();
  auto log = run(g, -1);
  ASSERT_EQ(log.size(), static_cast<size_t>(kRewrites));
  EXPECT_EQ(log[0], "#1 eliminate_dead_code: remove unused Neg 'dead'");
  EXPECT_EQ(log[1], "#2 simplify_algebra: drop Add 'add0' (x + 0)");
  EXPECT_EQ(log[2], "#3 fuse_epilogues: fuse Tanh 'tanh' into Conv 'conv'");
  EXPECT_EQ(log[3], "#4 fuse_epilogues: fuse Mul 'y' into Conv 'conv'");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).name, "y");
  ASSERT_TRUE(g.plan.has_value());
  EXPECT_GE(g.plan->arena_bytes, g.plan->lower_bound_bytes);
}

TEST(Pipeline, BisectLimitGivesExactlyNApplications) {
  for (int limit = 0; limit <= kRewrites + 1; ++limit) {
    ir::Graph g = small_model();
    auto log = run(g, limit);
    EXPECT_EQ(log.size(), static_cast<size_t>(std::min(limit, kRewrites))) << "limit " << limit;
    EXPECT_NO_THROW(ir::verify(g));
    EXPECT_TRUE(g.plan.has_value());  // planning is mandatory, never bisected away
  }
}

TEST(Pipeline, PrintAfterAllDumpsEachPass) {
  ir::Graph g = small_model();
  passes::bind_inputs(g, {{"x", {1, 2, 8}}});
  std::ostringstream dump;
  passes::PipelineOptions options;
  options.print_after_all = true;
  options.dump = &dump;
  passes::run_pipeline(g, options);
  std::string text = dump.str();
  EXPECT_NE(text.find("// IR after eliminate_dead_code (applications so far: 1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("// IR after simplify_algebra (applications so far: 2)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("// IR after fuse_epilogues (applications so far: 4)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("// IR after plan_memory (applications so far: 4)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("epilogue[Tanh(acc) 'tanh', Mul(acc, %"), std::string::npos) << text;
}

TEST(Pipeline, NoFuseOptionAndMemoryCap) {
  ir::Graph g = small_model();
  passes::bind_inputs(g, {{"x", {1, 2, 8}}});
  passes::PipelineOptions options;
  options.fuse = false;
  EXPECT_EQ(passes::run_pipeline(g, options).size(), 2u);
  EXPECT_EQ(g.nodes.size(), 3u);

  ir::Graph capped = small_model();
  passes::bind_inputs(capped, {{"x", {1, 2, 8}}});
  options.max_memory_bytes = 64;
  try {
    passes::run_pipeline(capped, options);
    FAIL() << "cap ignored";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::LimitExceeded);
  }
}

TEST(Pipeline, RejectsAMalformedGraphBeforeAnyPass) {
  ir::Graph g = small_model();
  passes::bind_inputs(g, {{"x", {1, 2, 8}}});
  std::swap(g.nodes[0], g.nodes[2]);
  EXPECT_THROW(passes::run_pipeline(g, {}), Error);
}

}  // namespace
}  // namespace lockstep
