// Determinism: the in-process sequence (A, A again, other graphs with the same node names, A
// again) gives identical SHA-256s on the cpu backend, and a changed hash is reported.
#include <gtest/gtest.h>

#include "core/hash.h"
#include "diff/determinism.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

TEST(Determinism, InProcessSequenceIsBitIdenticalOnCpu) {
  Model a = Model::from_graph(zoo::seed_flow_graph());
  std::vector<diff::OtherGraph> others{{"B", Model::from_graph(zoo::seed_flow_graph(1, 512)), zoo::seed_flow_inputs(512)},
                                       {"C", Model::from_graph(zoo::seed_flow_graph(2, 256)), zoo::seed_flow_inputs(256)}};
  diff::DeterminismReport report;
  report.backend = "cpu";
  report.output_names = {"out"};
  Options options;
  options.threads = 1;  // small shared test machines: no OpenMP spinning
  report.runs = diff::in_process_sequence(a, zoo::seed_flow_inputs(), "cpu", options, others);
  ASSERT_EQ(report.runs.size(), 6u);  // A1, A1 again, B, C, A2, A1 after A2
  for (const auto& r : report.runs) {
    EXPECT_TRUE(r.error.empty()) << r.mode << ": " << r.error;
    ASSERT_EQ(r.sha256.size(), 1u) << r.mode;
    EXPECT_EQ(r.sha256[0].size(), 64u);
  }
  EXPECT_FALSE(report.runs[2].of_a);
  EXPECT_NE(report.runs[2].sha256[0], report.runs[0].sha256[0]);  // B is another graph
  diff::find_differences(report);
  EXPECT_TRUE(report.identical()) << report.differences.front();

  // A flipped hash and a failed run are both differences.
  diff::DeterminismReport bad = report;
  bad.runs[4].sha256[0] = sha256_hex("something else");
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 1u);
  EXPECT_EQ(bad.differences[0], "output out: SHA-256 of A2 differs from A1");
  bad = report;
  bad.runs[1].error = "boom";
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 1u);
  EXPECT_NE(bad.differences[0].find("A1 again failed: boom"), std::string::npos);
}

TEST(Determinism, UnknownBackendIsRecordedNotThrown) {
  Model a = Model::from_graph(zoo::seed_flow_graph(0, 64));
  auto runs = diff::in_process_sequence(a, zoo::seed_flow_inputs(64), "tpu", {}, {});
  ASSERT_FALSE(runs.empty());
  EXPECT_NE(runs[0].error.find("unknown backend 'tpu'"), std::string::npos) << runs[0].error;
}

}  // namespace
}  // namespace lockstep
