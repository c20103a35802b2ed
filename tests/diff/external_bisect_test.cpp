// External bisection (diff/external_bisect.h): with an in-process faulty runner (fast, no Python)
// and, in tests/runners/ort_bisect_test.cpp, through ONNX Runtime in fresh processes.
#include "diff/external_bisect.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "diff/fault.h"
#include "onnx/export.h"
#include "runners/faulty_cpu.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep::diff {
namespace {

constexpr int kFaultsInProcess = 20;
constexpr double kFaultScale = 1.5;

using test::faulty_cpu;

std::string default_model_path() {
  static const std::string path = [] {
    std::string p = test::temp_dir() + "/seed_flow.onnx";
    zoo::write_seed_flow_onnx(p);
    return p;
  }();
  return path;
}

TEST(ExternalBisect, CleanCpuRunnerAgreesInOneRun) {
  ExternalBisectResult r = bisect_external(default_model_path(), Runner::backend("reference"),
                                           Runner::backend("cpu"), zoo::seed_flow_inputs());
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.test_invocations, 1);
  EXPECT_EQ(r.node_count, 174);
  EXPECT_NE(format_external_bisect(r).find("agreement"), std::string::npos);
}

TEST(ExternalBisect, NamesEachPlantedNodeOfTheDefaultInProcess) {
  const std::string path = default_model_path();
  auto inputs = zoo::seed_flow_inputs();
  ExternalBisectOptions options;
  options.trace = compute_reference_trace(path, inputs);
  const ir::Graph& g = options.trace->graph;
  const uint64_t seed = 4;
  std::printf("fault seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const int log2n = static_cast<int>(std::ceil(std::log2(static_cast<double>(g.nodes.size()))));
  for (int k = 0; k < kFaultsInProcess; ++k) {
    int index = static_cast<int>(rng() % g.nodes.size());
    FaultSpec spec;
    spec.node = g.nodes[index].name;
    spec.kind = k % 3 == 0 ? FaultKind::Offset : k % 3 == 1 ? FaultKind::Scale : FaultKind::NaN;
    spec.amount = spec.kind == FaultKind::Offset ? 0.25 : kFaultScale;
    ExternalBisectResult r =
        bisect_external(path, Runner::backend("reference"), faulty_cpu(spec), inputs, options);
    ASSERT_TRUE(r.diverged) << spec.node;
    EXPECT_EQ(r.node_name, spec.node)
        << "fault " << fault_kind_name(spec.kind) << " at #" << index + 1 << "\n"
        << format_external_bisect(r);
    EXPECT_EQ(r.verdict, "local") << spec.node;
    // outputs + binary search + local check: O(log N)
    EXPECT_LE(r.test_invocations, log2n + 2) << spec.node;
  }
}

TEST(ExternalBisect, RunnerAsReferenceSideAndJson) {
  const std::string path = default_model_path();
  auto inputs = zoo::seed_flow_inputs();
  FaultSpec spec;
  spec.node = zoo::seed_flow_graph().nodes[100].name;
  ExternalBisectOptions options;
  options.calibrate = false;
  ExternalBisectResult r =
      bisect_external(path, Runner::backend("cpu"), faulty_cpu(spec), inputs, options);
  ASSERT_TRUE(r.diverged);
  EXPECT_EQ(r.node_name, spec.node);
  EXPECT_EQ(r.verdict, "local");
  EXPECT_EQ(r.ref_invocations, r.test_invocations + 1);  // + the node's inputs for the local check
  std::string json = external_bisect_json(r);
  EXPECT_NE(json.find("\"name\": \"" + spec.node + "\""), std::string::npos) << json;
}

TEST(ExternalBisect, WrongInputCountIsAClearError) {
  try {
    bisect_external(default_model_path(), Runner::backend("reference"), Runner::backend("cpu"), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::MissingInput);
    EXPECT_NE(std::string(e.what()).find("2 inputs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lockstep::diff
