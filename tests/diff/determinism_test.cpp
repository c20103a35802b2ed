// Determinism: the in-process sequence (A, A again, B and C — A's graph with other weights — A
// again, A from another path) on the cpu backend, each step's bits against its own model's fresh
// bits; a changed hash, a failed run and a stale answer (B given A's bits) are each reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "core/hash.h"
#include "diff/determinism.h"
#include "onnx/export.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  Scratch() : path(test::temp_dir() + "/determinism_" + std::to_string(::getpid())) { fs::create_directories(path); }
  ~Scratch() { fs::remove_all(path); }
  std::string path;
};

TEST(Determinism, InProcessSequenceGivesEachModelItsFreshBitsOnCpu) {
  Scratch scratch;
  const std::string a_path = scratch.path + "/a.onnx";
  onnx::export_model(zoo::seed_flow_graph(0, 64), a_path);
  Model a = Model::load(a_path);
  const auto inputs = zoo::seed_flow_inputs(64);
  std::vector<diff::OtherGraph> others = diff::sequence_others(a, inputs, scratch.path, a_path);
  ASSERT_EQ(others.size(), 3u);  // B, C, A from another path
  EXPECT_TRUE(fs::exists(others[0].path) && fs::exists(others[1].path));
  diff::DeterminismReport report;
  report.backend = "cpu";
  report.output_names = {"out"};
  Options options;
  options.threads = 1;  // small shared test machines: no OpenMP spinning
  report.runs = diff::in_process_sequence(a, inputs, "cpu", options, others);
  std::vector<std::string> modes;
  for (const auto& r : report.runs) {
    modes.push_back(r.mode);
    EXPECT_TRUE(r.error.empty()) << r.mode << ": " << r.error;
    ASSERT_EQ(r.sha256.size(), 1u) << r.mode;
    EXPECT_EQ(r.sha256[0].size(), 64u);
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"A1", "A1 again", "B", "C", "A from another path", "A2", "A1 after A2"}));
  EXPECT_EQ(report.runs[2].expect, "B");
  EXPECT_EQ(report.runs[4].expect, "A");
  // B and C: the same structure, other bits (the weights differ, slightly).
  EXPECT_NE(report.runs[2].sha256[0], report.runs[0].sha256[0]);
  EXPECT_NE(report.runs[3].sha256[0], report.runs[2].sha256[0]);
  // The fresh bits of B and C, as a fresh process would give them: a new compile of each file.
  for (int k : {0, 1}) {
    auto exe = compile(Model::load(others[static_cast<size_t>(k)].path), "cpu", options);
    report.fresh[others[static_cast<size_t>(k)].label] = diff::output_hashes(exe->run(inputs));
  }
  diff::find_differences(report);
  EXPECT_TRUE(report.identical()) << report.differences.front();

  // A flipped hash and a failed run are both differences.
  diff::DeterminismReport bad = report;
  bad.runs[5].sha256[0] = sha256_hex("something else");
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 1u);
  EXPECT_EQ(bad.differences[0], "output out: SHA-256 of A2 differs from A1");
  EXPECT_EQ(bad.first_change, "A2");
  bad = report;
  bad.runs[1].error = "boom";
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 1u);
  EXPECT_NE(bad.differences[0].find("A1 again failed: boom"), std::string::npos);

  // A stale compiled model: C answered with B's bits is named as such, and so is B with A's.
  bad = report;
  bad.runs[3].sha256 = report.fresh.at("B");
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 2u);
  EXPECT_EQ(bad.differences[0], "output out: SHA-256 of C differs from C in a fresh process");
  EXPECT_EQ(bad.differences[1], "C (model C) gave B's bits: stale compiled state served for another model");
  EXPECT_EQ(bad.first_change, "C");
  bad = report;
  bad.runs[2].sha256 = report.runs[0].sha256;
  diff::find_differences(bad);
  ASSERT_EQ(bad.differences.size(), 2u);
  EXPECT_EQ(bad.differences[1], "B (model B) gave A's bits: stale compiled state served for another model");

  // Without B's fresh bits its step is listed, not compared.
  bad = report;
  bad.fresh.erase("B");
  diff::find_differences(bad);
  EXPECT_TRUE(bad.identical());
  ASSERT_EQ(bad.notes.size(), 1u);
  EXPECT_EQ(bad.notes[0], "B not compared: no fresh run of B");
}

TEST(Determinism, UnknownBackendIsRecordedNotThrown) {
  Model a = Model::from_graph(zoo::seed_flow_graph(0, 64));
  auto runs = diff::in_process_sequence(a, zoo::seed_flow_inputs(64), "tpu", {}, {});
  ASSERT_FALSE(runs.empty());
  EXPECT_NE(runs[0].error.find("unknown backend 'tpu'"), std::string::npos) << runs[0].error;
}

}  // namespace
}  // namespace lockstep
