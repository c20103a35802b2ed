// Acceptance of external bisection through ONNX Runtime in fresh processes: a fault planted by
// runners/faulty_runner.py at randomly chosen nodes is named exactly, on the embedded default
// and each shared model (seeds printed). Clean runners agree. SKIPs without onnxruntime.
//
// Each ORT invocation is a Python start-up (~0.3-1 s), so CI plants fewer faults in the big
// decoders; LOCKSTEP_FULL_ACCEPTANCE=1 plants 20 everywhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/npy.h"
#include "diff/external_bisect.h"
#include "runners/python_env.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep::diff {
namespace {

constexpr int kFullFaults = 20;
constexpr int kCiFaultsFlow = 10;      // the 216-node flow: half the sweep in CI
constexpr int kCiFaultsBigModels = 2;  // the decoders (284 and 413 nodes)
constexpr double kScale = 1.5;
constexpr double kOffset = 0.25;

struct OrtModel {
  std::string label;
  std::string path;
  std::vector<Tensor> inputs;
  int ci_faults;
};

std::vector<OrtModel> models() {
  std::vector<OrtModel> out;
  std::string embedded = test::temp_dir() + "/embedded_default.onnx";
  out.push_back({"embedded", embedded, zoo::seed_flow_inputs(), kFullFaults});
  for (auto [stem, faults] :
       std::vector<std::pair<std::string, int>>{{"vits_seed_174", kFullFaults},
                                                {"vits_seed_flow_T1024", kCiFaultsFlow},
                                                {"vits_seed_dec_T256", kCiFaultsBigModels},
                                                {"vits_low_dec_T128", kCiFaultsBigModels}}) {
    std::string base = test::shared_models_dir() + "/" + stem;
    out.push_back({stem, base + ".onnx", {}, faults});
  }
  return out;
}

OrtModel load(const std::string& label) {
  for (OrtModel m : models()) {
    if (m.label != label) continue;
    if (label == "embedded")
      zoo::write_seed_flow_onnx(m.path);
    else {
      std::string base = test::shared_models_dir() + "/" + label;
      m.inputs = {read_npy(base + ".z_p.npy"), read_npy(base + ".y_mask.npy")};
    }
    return m;
  }
  throw Error(ErrorCode::Internal, "no model " + label);
}

bool full_acceptance() {
  const char* env = std::getenv("LOCKSTEP_FULL_ACCEPTANCE");
  return env && std::string(env) == "1";
}

uint64_t fault_seed(size_t model_index) {
  if (const char* env = std::getenv("LOCKSTEP_BISECT_SEED"); env && *env)
    return std::strtoull(env, nullptr, 10);
  return 2026 + model_index;
}

class OrtBisect : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    python_ = test::find_python("onnxruntime onnx numpy");
    if (python_.empty())
      GTEST_SKIP() << "no python3 with onnxruntime, onnx and numpy (pip install onnxruntime onnx "
                      "numpy; or set "
                      "LOCKSTEP_PYTHON): external bisection through ONNX Runtime NOT tested";
  }
  std::string python_;
};

TEST_P(OrtBisect, NamesEachPlantedNodeExactly) {
  OrtModel m = load(GetParam());
  size_t model_index = 0;
  while (models()[model_index].label != m.label) ++model_index;
  const int faults = full_acceptance() ? kFullFaults : m.ci_faults;
  const uint64_t seed = fault_seed(model_index);
  auto start = std::chrono::steady_clock::now();
  ExternalBisectOptions options;
  options.trace = compute_reference_trace(m.path, m.inputs);
  const ir::Graph& g = options.trace->graph;
  std::printf("[ort-bisect] %s: %zu nodes, %d faults, seed %llu (LOCKSTEP_BISECT_SEED overrides)\n",
              m.label.c_str(), g.nodes.size(), faults, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  int exact = 0, invocations = 0;
  const int log2n = static_cast<int>(std::ceil(std::log2(static_cast<double>(g.nodes.size()))));
  for (int k = 0; k < faults; ++k) {
    const ir::Node& node = g.nodes[rng() % g.nodes.size()];
    const char* kind = k % 3 == 0 ? "scale" : k % 3 == 1 ? "offset" : "nan";
    double amount = k % 3 == 1 ? kOffset : kScale;
    Runner test = Runner::command(test::faulty_ort_command(python_, node.name, kind, amount));
    ExternalBisectResult r =
        bisect_external(m.path, Runner::backend("reference"), test, m.inputs, options);
    invocations += r.test_invocations;
    EXPECT_TRUE(r.diverged) << node.name;
    EXPECT_EQ(r.node_name, node.name) << kind << " fault\n" << format_external_bisect(r);
    EXPECT_EQ(r.verdict, "local") << node.name;
    EXPECT_LE(r.test_invocations, log2n + 3) << node.name;
    exact += r.node_name == node.name ? 1 : 0;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ort-bisect] %s: %d/%d planted nodes named exactly, %d ORT invocations, %.1f s\n",
              m.label.c_str(), exact, faults, invocations, seconds);
}

TEST_P(OrtBisect, CleanOrtAgreesInOneRun) {
  OrtModel m = load(GetParam());
  ExternalBisectResult r =
      bisect_external(m.path, Runner::backend("reference"),
                      Runner::command(test::ort_runner_command(python_)), m.inputs);
  EXPECT_FALSE(r.diverged) << format_external_bisect(r);
  EXPECT_EQ(r.test_invocations, 1);
}

INSTANTIATE_TEST_SUITE_P(Models, OrtBisect,
                         ::testing::Values("embedded", "vits_seed_174", "vits_seed_flow_T1024",
                                           "vits_seed_dec_T256", "vits_low_dec_T128"));

}  // namespace
}  // namespace lockstep::diff
