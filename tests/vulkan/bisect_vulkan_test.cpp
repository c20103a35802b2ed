// Bisection with T = vulkan: a clean run agrees at every kernel boundary with the tolerances
// calibrated from the cpu noise floor, and faults planted through the test-only fault hook (the
// taps' node-by-node run) are named exactly and as local.
#include <gtest/gtest.h>

#include <iostream>

#include "diff/bisect.h"
#include "diff/bisect_support.h"
#include "diff/report.h"
#include "vulkan/vulkan_test_util.h"

namespace lockstep {
namespace {

constexpr uint64_t kDefaultSeed = 20251202;

void bisect_model(const std::string& label, int faults) {
  test::BisectModel m = test::load_bisect_model(label);
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  const ir::Graph& g = bisector.graph();
  diff::BisectReport clean = bisector.run("vulkan");
  EXPECT_FALSE(clean.diverged()) << label << ": " << diff::summary_line(clean);
  const uint64_t seed = test::bisect_seed(kDefaultSeed);
  const std::vector<int> kernels = test::choose_kernels(g, faults, seed);
  int named = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const int k = kernels[i];
    diff::FaultSpec fault = test::fault_number(static_cast<int>(i), g.nodes[static_cast<size_t>(k)].result_onnx_name());
    diff::BisectReport r = bisector.run("vulkan", &fault);
    ASSERT_TRUE(r.diverged()) << label << ": fault at #" << k + 1 << " not seen";
    EXPECT_EQ(r.first_divergent, k) << label << ": planted at #" << k + 1 << " '" << fault.node << "', named "
                                    << diff::summary_line(r);
    EXPECT_EQ(r.rows[static_cast<size_t>(k)].verdict, diff::Verdict::Local) << fault.node;
    named += r.first_divergent == k;
  }
  std::cout << "[ bisect vulkan ] " << label << ": seed " << seed << ", " << named << "/" << kernels.size()
            << " planted faults named exactly" << std::endl;
}

TEST(BisectVulkan, EmbeddedDefaultCleanAgreesAndPlantedFaultsAreNamed) {
  LOCKSTEP_REQUIRE_VULKAN();
  bisect_model("embedded", 12);
}

TEST(BisectVulkan, DecoderCleanAgreesAndPlantedFaultsAreNamed) {
  LOCKSTEP_REQUIRE_VULKAN();
  if (!std::filesystem::exists(test::shared_models_dir() + "/vits_low_dec_T128.onnx")) GTEST_SKIP() << "no shared models";
  bisect_model("vits_low_dec_T128", 3);
}

}  // namespace
}  // namespace lockstep
