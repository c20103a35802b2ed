// Shared pieces of the bisect tests: the models (embedded default + shared fixtures) with their
// inputs, and a seeded choice of kernel boundaries to plant faults at.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/npy.h"
#include "diff/bisect.h"
#include "diff/fault.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "support/fixtures.h"
#include "zoo/seed_flow.h"

namespace lockstep::test {

// One CPU thread: the machines that run the suite are small and shared; OpenMP spinning on a busy
// machine costs far more than it gains here.
inline constexpr int kTestThreads = 1;

struct BisectModel {
  std::string label;  // "embedded" or the shared stem
  Model model;
  std::vector<Tensor> inputs;
};

inline const std::vector<std::string>& bisect_model_labels() {
  static const std::vector<std::string> labels{"embedded", "vits_seed_174", "vits_seed_flow_T1024",
                                               "vits_seed_dec_T256", "vits_low_dec_T128"};
  return labels;
}

inline BisectModel load_bisect_model(const std::string& label) {
  if (label == "embedded") return {label, Model::from_graph(zoo::seed_flow_graph()), zoo::seed_flow_inputs()};
  const std::string stem = shared_models_dir() + "/" + label;
  return {label, Model::load(stem + ".onnx"), {read_npy(stem + ".z_p.npy"), read_npy(stem + ".y_mask.npy")}};
}

// Rotates through the four fault kinds; every amount is far beyond float32 noise.
inline diff::FaultSpec fault_number(int i, const std::string& node) {
  diff::FaultSpec f;
  f.node = node;
  switch (i % 4) {
    case 0: f.kind = diff::FaultKind::Scale; f.amount = 1.5; break;
    case 1: f.kind = diff::FaultKind::Offset; f.amount = 0.5; break;
    case 2: f.kind = diff::FaultKind::NaN; break;
    default: f.kind = diff::FaultKind::Stale; break;  // zeros: the value of no run at all
  }
  return f;
}

inline diff::BisectConfig test_bisect_config() {
  diff::BisectConfig config;
  config.options.threads = kTestThreads;
  return config;
}

// The seed of the fault choices: LOCKSTEP_BISECT_SEED, else a fixed default (printed by the tests).
inline uint64_t bisect_seed(uint64_t fallback) {
  if (const char* env = std::getenv("LOCKSTEP_BISECT_SEED"); env && *env) return std::strtoull(env, nullptr, 10);
  return fallback;
}

// `count` distinct kernel indices (0-based) whose output 0 is floating, in [first, last).
inline std::vector<int> choose_kernels(const ir::Graph& graph, int count, uint64_t seed, int first = 0, int last = -1) {
  if (last < 0) last = static_cast<int>(graph.nodes.size());
  std::vector<int> candidates;
  for (int n = first; n < last; ++n) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(n)];
    if (!node.outputs.empty() && node.outputs[0] != ir::kNoValue && is_floating(graph.value(node.outputs[0]).dtype))
      candidates.push_back(n);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  if (static_cast<int>(candidates.size()) > count) candidates.resize(static_cast<size_t>(count));
  return candidates;
}

}  // namespace lockstep::test
