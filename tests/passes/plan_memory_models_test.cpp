// The memory planner on the shared models: never below the lower bound, close to it, checked.
#include <gtest/gtest.h>

#include <iostream>

#include "ir/verify.h"
#include "onnx/import.h"
#include "passes/check_memory_plan.h"
#include "passes/pipeline.h"
#include "support/fixtures.h"

namespace lockstep {
namespace {

// Greedy-by-size placement lands near the peak live total on these chains of convolutions.
constexpr double kArenaOverLowerBoundMax = 1.2;

class PlanSharedModel : public ::testing::TestWithParam<const char*> {};

TEST_P(PlanSharedModel, ArenaWithinBoundsAndChecked) {
  ir::Graph graph = onnx::import_model(test::shared_model(GetParam()));
  passes::bind_inputs(graph, {});
  passes::run_pipeline(graph, {});
  ASSERT_TRUE(graph.plan.has_value());
  const ir::MemoryPlan& plan = *graph.plan;
  std::cout << "[ plan ] " << GetParam() << ": arena " << plan.arena_bytes << " bytes, lower bound "
            << plan.lower_bound_bytes << " bytes, ratio "
            << static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.lower_bound_bytes) << "\n";
  EXPECT_GT(plan.lower_bound_bytes, 0);
  EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
  EXPECT_LE(static_cast<double>(plan.arena_bytes), kArenaOverLowerBoundMax * static_cast<double>(plan.lower_bound_bytes));
  EXPECT_NO_THROW(passes::check_memory_plan(graph));
  EXPECT_NO_THROW(ir::verify(graph));
}

INSTANTIATE_TEST_SUITE_P(SharedModels, PlanSharedModel,
                         ::testing::Values("vits_seed_174", "vits_seed_flow_T1024", "vits_seed_dec_T256",
                                           "vits_low_dec_T128"));

}  // namespace
}  // namespace lockstep
