// A backend that plans memory for itself (Backend::plans_memory, the CUDA executor) gets its
// run-time shape segments unplanned, so that a miss plans once, not twice; safe mode keeps the
// pipeline's plan. Without a GPU: a backend that plans each graph as the pipeline would and
// compiles it on the cpu. Oracle: the same model on the cpu through the pipeline's plan
// (bit-identical: the same plan and kernels either way).
#include "support/paths.h"
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cpu/backend.h"
#include "core/hash.h"
#include "core/npy.h"
#include "dynamic/executable.h"
#include "lockstep/lockstep.h"
#include "passes/pipeline.h"

namespace lockstep {
namespace {

class SelfPlanningBackend final : public Backend {
 public:
  std::string name() const override { return "self-planning"; }
  bool available(std::string*) const override { return true; }
  std::optional<std::string> unsupported_reason(const ir::Graph& g, const ir::Node& n) const override {
    return cpu::backend().unsupported_reason(g, n);
  }
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    ++(graph.plan ? came_planned : came_unplanned);
    if (graph.plan) return cpu::backend().compile(graph, options);
    ir::Graph planned = graph;
    EXPECT_TRUE(passes::plan_when_shapes_known(planned, options.max_memory_bytes)) << "a segment with run-time shapes";
    planned_bytes += planned.plan->arena_bytes;
    return cpu::backend().compile(planned, options);
  }
  bool plans_memory() const override { return true; }
  mutable int came_planned = 0, came_unplanned = 0;
  mutable int64_t planned_bytes = 0;  // the plans this backend made, summed
};

const std::string kArch = lockstep_test::source_dir() + "/tests/fixtures/piper_arch/piper_arch_s1";

std::vector<Tensor> arch_inputs(int phonemes) {
  auto data = read_npz(kArch + "_n" + std::to_string(phonemes) + ".npz");
  return {data.at("input"), data.at("input_lengths"), Tensor::from_vector<float>({3}, {0.667f, 1.0f, 0.8f})};
}

TEST(BackendPlans, SegmentsComeUnplannedAndKeepThePipelinePlansBits) {
  ASSERT_FALSE(cpu::backend().plans_memory());
  Model model = Model::load(kArch + ".onnx");
  SelfPlanningBackend self;
  auto own = dynamic::compile_dynamic(model.graph(), self, Options{});
  auto cpu = dynamic::compile_dynamic(model.graph(), cpu::backend(), Options{});
  RunOptions seed7;
  seed7.seed = 7;
  for (int n : {31, 9, 31}) {
    SCOPED_TRACE(std::to_string(n) + " phonemes");
    const Tensor a = own->run(arch_inputs(n), seed7).at(0);
    const Tensor b = cpu->run(arch_inputs(n), seed7).at(0);
    EXPECT_EQ(sha256_hex(a), sha256_hex(b));
  }
  EXPECT_EQ(self.came_planned, 0) << "the pipeline planned a segment the backend plans again";
  EXPECT_EQ(self.came_unplanned, dynamic::stats(*own)->segments_compiled);
  EXPECT_GT(self.came_unplanned, 1);
  // The cache's byte bound counts the backend's plans (the executables' graphs hold them).
  EXPECT_EQ(dynamic::stats(*own)->cached_bytes, self.planned_bytes);
  EXPECT_EQ(dynamic::stats(*own)->cached_bytes, dynamic::stats(*cpu)->cached_bytes);
}

// Safe mode: the CUDA executor keeps every value in its own slot and makes no plan, so segments
// keep the pipeline's.
TEST(BackendPlans, SafeModeSegmentsComePlanned) {
  Model model = Model::load(kArch + ".onnx");
  SelfPlanningBackend self;
  Options safe;
  safe.safe = true;
  auto own = dynamic::compile_dynamic(model.graph(), self, safe);
  own->run(arch_inputs(9));
  EXPECT_EQ(self.came_unplanned, 0);
  EXPECT_GT(self.came_planned, 0);
  EXPECT_GT(dynamic::stats(*own)->cached_bytes, 0);
}

// LOCKSTEP_SEGMENT_PLAN=pipeline (A/B timing): the pipeline plans them as before; read when the
// executable is made.
TEST(BackendPlans, PipelinePlansOnRequest) {
  Model model = Model::load(kArch + ".onnx");
  SelfPlanningBackend self;
  ::setenv("LOCKSTEP_SEGMENT_PLAN", "pipeline", 1);
  auto own = dynamic::compile_dynamic(model.graph(), self, Options{});
  ::unsetenv("LOCKSTEP_SEGMENT_PLAN");
  own->run(arch_inputs(9));
  EXPECT_EQ(self.came_unplanned, 0);
  EXPECT_GT(self.came_planned, 0);
}

}  // namespace
}  // namespace lockstep
