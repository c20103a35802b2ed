// Bisection of lockstep backends (issue 4 acceptance): a fault planted at 20 seeded random kernel
// boundaries of the embedded default and of every shared model is named exactly, and as "local";
// a fault upstream is "inherited" at every divergent node below it; a clean cpu agrees everywhere.
// The float64 reference and the cpu calibration run once per model (one Bisector) and serve all
// of its faults.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <set>

#include "diff/bisect.h"
#include "diff/report.h"
#include "bisect_support.h"
#include "support/graph_check.h"

namespace lockstep {
namespace {

using diff::FaultKind;
using diff::FaultSpec;
using diff::Verdict;

constexpr int kFaultsPerModel = 20;
constexpr uint64_t kDefaultSeed = 20240611;

using test::fault_number;

// Kernels reachable from `from` through data edges (its own outputs' consumers and so on).
std::set<int> descendants(const ir::Graph& g, int from) {
  auto consumers = g.consumers();
  std::set<int> seen;
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    for (ir::ValueId o : g.nodes[static_cast<size_t>(n)].outputs)
      if (o != ir::kNoValue)
        for (int c : consumers[static_cast<size_t>(o)])
          if (seen.insert(c).second) stack.push_back(c);
  }
  return seen;
}

class BisectModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BisectModelTest, CleanAgreesAndEveryPlantedFaultIsNamedExactly) {
  const auto t0 = std::chrono::steady_clock::now();
  test::BisectModel m = test::load_bisect_model(GetParam());
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  const ir::Graph& g = bisector.graph();
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Clean: the cpu run is its own calibration, so every node is within tolerance.
  diff::BisectReport clean = bisector.run("cpu");
  EXPECT_FALSE(clean.diverged()) << diff::summary_line(clean);
  ASSERT_EQ(clean.rows.size(), g.nodes.size());
  for (const auto& o : clean.outputs) EXPECT_TRUE(o.agrees) << o.name << " rel_l2 " << o.metrics.rel_l2;

  const uint64_t seed = test::bisect_seed(kDefaultSeed);
  std::vector<int> kernels = test::choose_kernels(g, kFaultsPerModel, seed);
  std::cout << "[ bisect ] " << GetParam() << ": " << g.nodes.size() << " kernels, seed " << seed
            << " (LOCKSTEP_BISECT_SEED), faults at kernels";
  for (int k : kernels) std::cout << ' ' << k + 1;
  std::cout << std::endl;
  ASSERT_EQ(static_cast<int>(kernels.size()), kFaultsPerModel);
  int named = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const int k = kernels[i];
    FaultSpec fault = fault_number(static_cast<int>(i), g.nodes[static_cast<size_t>(k)].result_onnx_name());
    diff::BisectReport r = bisector.run("cpu", &fault);
    ASSERT_TRUE(r.diverged()) << "fault " << diff::fault_kind_name(fault.kind) << " at #" << k + 1 << " '" << fault.node
                              << "' not seen (seed " << seed << ")";
    EXPECT_EQ(r.first_divergent, k) << "planted at #" << k + 1 << " '" << fault.node << "' ("
                                    << diff::fault_kind_name(fault.kind) << "), named #" << r.first_divergent + 1 << " '"
                                    << r.rows[static_cast<size_t>(r.first_divergent)].onnx_name << "' (seed " << seed << ")";
    EXPECT_EQ(r.rows[static_cast<size_t>(k)].verdict, Verdict::Local) << fault.node;
    named += r.first_divergent == k && r.rows[static_cast<size_t>(k)].verdict == Verdict::Local;
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ bisect ] " << GetParam() << ": " << named << "/" << kFaultsPerModel
            << " planted faults named exactly and local; reference+calibration " << setup_s << " s, total " << total_s
            << " s" << std::endl;

  // One fault in the first third: local at its node, inherited at every divergent node below it,
  // and no node that is not below it diverges.
  std::vector<int> early = test::choose_kernels(g, 1, seed + 1, 0, std::max<int>(1, static_cast<int>(g.nodes.size()) / 3));
  ASSERT_EQ(early.size(), 1u);
  FaultSpec fault{g.nodes[static_cast<size_t>(early[0])].result_onnx_name(), FaultKind::Scale, 1.25};
  diff::BisectReport r = bisector.run("cpu", &fault, diff::LocalMode::Divergent);
  ASSERT_EQ(r.first_divergent, early[0]) << diff::summary_line(r);
  EXPECT_EQ(r.rows[static_cast<size_t>(early[0])].verdict, Verdict::Local);
  std::set<int> below = descendants(g, early[0]);
  int inherited = 0;
  for (size_t n = 0; n < r.rows.size(); ++n) {
    if (static_cast<int>(n) == early[0]) continue;
    const auto& row = r.rows[n];
    if (!below.count(static_cast<int>(n))) {
      EXPECT_EQ(row.verdict, Verdict::Ok) << "#" << n + 1 << " '" << row.onnx_name << "' is not below the fault";
      continue;
    }
    EXPECT_TRUE(row.verdict == Verdict::Inherited || row.verdict == Verdict::Ok)
        << "#" << n + 1 << " '" << row.onnx_name << "': " << diff::verdict_name(row.verdict) << ", local error "
        << row.local_error.value_or(-1) << " tolerance " << row.tolerance;
    inherited += row.verdict == Verdict::Inherited;
  }
  EXPECT_GT(inherited, 0) << "a fault at #" << early[0] + 1 << " should reach the nodes below it";
  std::cout << "[ bisect ] " << GetParam() << ": fault at #" << early[0] + 1 << " local, " << inherited
            << " nodes below it inherited" << std::endl;
}

INSTANTIATE_TEST_SUITE_P(Models, BisectModelTest, ::testing::ValuesIn(test::bisect_model_labels()),
                         [](const auto& info) { return info.param; });

// A stale buffer: the node keeps its value from a run on other inputs.
TEST(Bisect, StaleValueFromAnotherRunIsLocal) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  const ir::Graph& g = bisector.graph();
  const int k = static_cast<int>(g.nodes.size()) / 2;
  std::vector<Tensor> other = m.inputs;
  other[0] = other[0].clone();
  for (int64_t i = 0; i < other[0].numel(); ++i) other[0].data<float>()[i] *= -0.5f;
  Tensor stale;
  auto exe = find_backend("cpu")->compile(g, test::test_bisect_config().options);
  RunOptions run;
  run.tap = [&](const ir::Node& node, int o, const Tensor& v) {
    if (o == 0 && node.name == g.nodes[static_cast<size_t>(k)].name) stale = v.clone();
  };
  exe->run(other, run);
  ASSERT_TRUE(stale.defined());
  FaultSpec fault{g.nodes[static_cast<size_t>(k)].result_onnx_name(), FaultKind::Stale, 0, 0, stale};
  diff::BisectReport r = bisector.run("cpu", &fault);
  EXPECT_EQ(r.first_divergent, k);
  EXPECT_EQ(r.rows[static_cast<size_t>(k)].verdict, Verdict::Local);
}

TEST(Bisect, ReportsCarryEveryRow) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  const ir::Graph& g = bisector.graph();
  const int k = 7;
  FaultSpec fault{g.nodes[k].result_onnx_name(), FaultKind::Offset, 1.0};
  diff::BisectReport r = bisector.run("cpu", &fault);
  ASSERT_EQ(r.first_divergent, k);
  nlohmann::json j = diff::to_json(r);
  EXPECT_EQ(j["nodes"].size(), g.nodes.size());
  EXPECT_EQ(j["first_divergent"]["onnx_name"], fault.node);
  EXPECT_EQ(j["first_divergent"]["verdict"], "local");
  EXPECT_FALSE(j["agrees"].get<bool>());
  std::string md = diff::format_markdown(r);
  size_t table_lines = 0;
  for (size_t p = md.find("\n| "); p != std::string::npos; p = md.find("\n| ", p + 1)) ++table_lines;
  EXPECT_EQ(table_lines, g.nodes.size() + 2);  // header, rule line, one row per node
  std::string text = diff::format_text(r);
  EXPECT_NE(text.find("first divergent node: #" + std::to_string(k + 1) + " '" + fault.node + "'"), std::string::npos);
  EXPECT_NE(text.find("> "), std::string::npos);
}

TEST(Bisect, OneNodeGraphKeepsConstantsAndFeedsTheRest) {
  test::BisectModel m = test::load_bisect_model("embedded");
  ir::Graph g = prepare(m.model, {});
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    ir::Graph one = diff::one_node_graph(g, static_cast<int>(n));
    ASSERT_EQ(one.nodes.size(), 1u);
    EXPECT_EQ(one.nodes[0].result_onnx_name(), g.nodes[n].result_onnx_name());
    EXPECT_FALSE(one.plan.has_value());
    for (ir::ValueId in : one.inputs) EXPECT_FALSE(one.is_constant(in));
    for (ir::ValueId in : g.nodes[n].inputs) {
      if (in != ir::kNoValue && g.is_constant(in)) {
        EXPECT_TRUE(one.is_constant(one.find_value(g.value(in).name))) << g.value(in).name;
      }
    }
  }
}

TEST(Bisect, BadArgumentsAreClearErrors) {
  test::BisectModel m = test::load_bisect_model("embedded");
  diff::BisectConfig bad_ref;
  bad_ref.ref = "metal";
  try {
    diff::Bisector b(m.model, m.inputs, bad_ref);
    FAIL() << "an unknown reference backend was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("unknown backend 'metal'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(diff::Bisector(m.model, {m.inputs[0]}, {}), Error);  // one input of two
  diff::Bisector bisector(m.model, m.inputs, test::test_bisect_config());
  try {
    bisector.run("tpu");
    FAIL() << "an unknown test backend was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
  FaultSpec nowhere{"no/such/node", FaultKind::Scale, 2};
  try {
    bisector.run("cpu", &nowhere);
    FAIL() << "a fault at an unknown node was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/node"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bisector.run("reference", &nowhere), Error);
}

// `lockstep bisect --seed` draws the random ops as `lockstep run --seed` does (a voice with noise on
// is bisected on the noise it was run with): every side runs with BisectConfig::seed.
TEST(Bisect, RandomOpsDrawWithTheConfiguredSeed) {
  ir::Graph g;
  test::GraphBuilder b(g);
  ir::ValueId x = b.value("x", {1, 4, 64});
  g.inputs = {x};
  ir::ValueId noise = b.value("noise", {1, 4, 64});
  g.nodes.push_back(b.node(ir::Op::RandomNormalLike, "/noise", {x}, noise));  // no seed attribute: the run's
  ir::ValueId y = b.value("y", {1, 4, 64});
  g.nodes.push_back(b.node(ir::Op::Add, "/add", {x, noise}, y));
  g.outputs = {y};
  const Model model = Model::from_graph(g);
  const std::vector<Tensor> inputs = {Tensor(DType::Float32, {1, 4, 64})};
  auto drawn = [&](uint64_t seed) {
    RunOptions run;
    run.seed = seed;
    return compile(model, "reference", Options{})->run(inputs, run).at(0);
  };
  diff::BisectConfig config = test::test_bisect_config();
  config.seed = 7;
  diff::Bisector bisector(model, inputs, config);
  const Tensor& ref = bisector.reference_output(0);
  EXPECT_EQ(diff::compare(ref, drawn(7)).max_abs_delta, 0.0) << "the reference side drew another seed's noise";
  EXPECT_GT(diff::compare(ref, drawn(0)).max_abs_delta, 0.0) << "seeds 7 and 0 should draw different noise";
  const diff::BisectReport report = bisector.run("cpu");
  EXPECT_FALSE(report.diverged()) << "the cpu drew other noise than the reference";
}

}  // namespace
}  // namespace lockstep
