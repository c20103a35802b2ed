// Bisection with T = cuda: a clean GPU run agrees at every kernel boundary with tolerances
// calibrated from the cpu noise floor, and faults planted in the CUDA executor (test-only hook)
// are named exactly and as local. Skips without a GPU.
#include <gtest/gtest.h>

#include <iostream>

#include "diff/bisect.h"
#include "diff/bisect_support.h"
#include "diff/report.h"
#include "gpu_test_util.h"

namespace lockstep {
namespace {

constexpr int kGpuFaults = 5;
constexpr uint64_t kDefaultSeed = 20240613;

TEST(BisectCuda, CleanAgreesAndPlantedFaultsAreNamed) {
  LOCKSTEP_REQUIRE_GPU();
  for (const std::string label : {"embedded", "vits_seed_dec_T256"}) {
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
    for (size_t i = 0; i < kernels.size(); ++i) {
      const int k = kernels[i];
      diff::FaultSpec fault{g.nodes[static_cast<size_t>(k)].result_onnx_name(),
                            i % 2 ? diff::FaultKind::Offset : diff::FaultKind::Scale, i % 2 ? 0.5 : 1.5};
      diff::BisectReport r = bisector.run("cuda", &fault);
      ASSERT_TRUE(r.diverged()) << label << ": fault at #" << k + 1 << " not seen";
      EXPECT_EQ(r.first_divergent, k) << label << ": planted at #" << k + 1 << " '" << fault.node << "', named "
                                      << diff::summary_line(r);
      EXPECT_EQ(r.rows[static_cast<size_t>(k)].verdict, diff::Verdict::Local) << fault.node;
    }
  }
}

}  // namespace
}  // namespace lockstep
