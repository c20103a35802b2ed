// bisect-passes names a planted faulty pass application exactly (PipelineOptions::fault, test
// only), reports agreement on a clean pipeline, and prints the IR on both sides of the culprit.
#include <gtest/gtest.h>

#include <iostream>

#include "bisect_support.h"
#include "diff/bisect_passes.h"
#include "diff/fault.h"

namespace lockstep {
namespace {

constexpr uint64_t kDefaultSeed = 20240612;

diff::BisectPassesConfig passes_config() {
  diff::BisectPassesConfig config;
  config.options.threads = test::kTestThreads;
  return config;
}

TEST(BisectPasses, CleanPipelineAgrees) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::BisectPassesReport r = diff::bisect_passes(m.model, m.inputs, passes_config());
  EXPECT_GT(r.total_applications, 0);
  EXPECT_FALSE(r.baseline_diverges) << r.baseline_error;
  EXPECT_FALSE(r.found()) << r.culprit_line;
  ASSERT_EQ(r.probes.size(), 2u);  // no application, every application
  EXPECT_TRUE(r.probes[1].within) << r.probes[1].error;
}

TEST(BisectPasses, PlantedFaultyApplicationIsNamedExactly) {
  for (const std::string label : {"embedded", "vits_seed_174"}) {
    test::BisectModel m = test::load_bisect_model(label);
    diff::BisectPassesConfig config = passes_config();
    std::vector<std::string> log;
    diff::prepare_with_limit(m.model, config, -1, &log);
    const int total = static_cast<int>(log.size());
    ASSERT_GT(total, 2);
    const uint64_t seed = test::bisect_seed(kDefaultSeed);
    std::mt19937_64 rng(seed);
    std::vector<int> planted{1, total, 1 + static_cast<int>(rng() % static_cast<uint64_t>(total))};
    std::cout << "[ bisect-passes ] " << label << ": " << total << " applications, seed " << seed << ", faults at";
    for (int p : planted) std::cout << ' ' << p;
    std::cout << std::endl;
    for (int p : planted) {
      config.fault_application = p;
      config.fault = [](ir::Graph& g) { ASSERT_TRUE(diff::corrupt_graph_for_testing(g)); };
      diff::BisectPassesReport r = diff::bisect_passes(m.model, m.inputs, config);
      ASSERT_TRUE(r.found()) << label << ": fault after application " << p << " not found";
      EXPECT_EQ(r.culprit, p) << label << " (seed " << seed << ")";
      EXPECT_EQ(r.culprit_line, log[static_cast<size_t>(p - 1)]);
      EXPECT_NE(r.ir_before, r.ir_after);
      EXPECT_LE(static_cast<int>(r.probes.size()), 2 + 1 + static_cast<int>(std::log2(total)) + 1);
    }
  }
}

TEST(BisectPasses, UnknownBackendIsAClearError) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::BisectPassesConfig config = passes_config();
  config.backend = "metal";
  try {
    diff::bisect_passes(m.model, m.inputs, config);
    FAIL() << "an unknown backend was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("unknown backend 'metal'"), std::string::npos);
  }
}

}  // namespace
}  // namespace lockstep
