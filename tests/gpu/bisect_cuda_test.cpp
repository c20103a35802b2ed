// Bisection with T = cuda: a clean GPU run agrees at every kernel boundary with tolerances
// calibrated from the cpu noise floor, and faults planted in the CUDA executor (test-only hook)
// are named exactly and as local. Skips without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "diff/bisect.h"
#include "diff/bisect_support.h"
#include "diff/report.h"
#include "gpu_test_util.h"

namespace lockstep {
namespace {

constexpr int kGpuFaults = 20;  // per model, as on the cpu (tests/diff/bisect_test.cpp)
constexpr uint64_t kDefaultSeed = 20240613;

// Every model whose files are present here (the GPU machine may carry only some of them).
TEST(BisectCuda, CleanAgreesAndPlantedFaultsAreNamed) {
  LOCKSTEP_REQUIRE_GPU();
  int models = 0;
  for (const std::string& label : test::bisect_model_labels()) {
    if (label != "embedded" && !std::filesystem::exists(test::shared_models_dir() + "/" + label + ".onnx")) {
      std::cout << "[ bisect cuda ] " << label << ": not present here, skipped" << std::endl;
      continue;
    }
    ++models;
    test::BisectModel m = test::load_bisect_model(label);
    diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
    const ir::Graph& g = bisector.graph();
    diff::BisectReport clean = bisector.run("cuda");
    EXPECT_FALSE(clean.diverged()) << label << ": " << diff::summary_line(clean);
    const uint64_t seed = test::bisect_seed(kDefaultSeed);
    std::vector<int> kernels = test::choose_kernels(g, kGpuFaults, seed);
    std::cout << "[ bisect cuda ] " << label << ": seed " << seed << ", faults at kernels";
    for (int k : kernels) std::cout << ' ' << k + 1;
    std::cout << std::endl;
    int named = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const int k = kernels[i];
      diff::FaultSpec fault = test::fault_number(static_cast<int>(i), g.nodes[static_cast<size_t>(k)].result_onnx_name());
      diff::BisectReport r = bisector.run("cuda", &fault);
      ASSERT_TRUE(r.diverged()) << label << ": fault at #" << k + 1 << " not seen";
      EXPECT_EQ(r.first_divergent, k) << label << ": planted at #" << k + 1 << " '" << fault.node << "', named "
                                      << diff::summary_line(r);
      EXPECT_EQ(r.rows[static_cast<size_t>(k)].verdict, diff::Verdict::Local) << fault.node;
      named += r.first_divergent == k;
    }
    std::cout << "[ bisect cuda ] " << label << ": " << named << "/" << kernels.size() << " named exactly" << std::endl;
  }
  EXPECT_GT(models, 0);
}

}  // namespace
}  // namespace lockstep
