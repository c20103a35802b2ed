#include "diff/synth.h"

#include <cmath>
#include <cstdlib>

#include "zoo/random.h"

namespace lockstep::diff {

SyntheticWeights parse_synthetic_weights(const std::string& text) {
  SyntheticWeights spec;
  size_t comma = text.find(',');
  std::string sigma = text.substr(0, comma);
  std::string seed = comma == std::string::npos ? "" : text.substr(comma + 1);
  auto bad = [&] {
    return Error(
        ErrorCode::InvalidArgument,
        "--synthetic-weights wants SIGMA or SIGMA,SEED (e.g. 0.1 or 0.1,0), got '" + text + "'");
  };
  char* end = nullptr;
  spec.sigma = std::strtod(sigma.c_str(), &end);
  if (sigma.empty() || *end != '\0' || !std::isfinite(spec.sigma) || spec.sigma <= 0) throw bad();
  if (comma != std::string::npos) {
    if (seed.empty() || seed.find_first_not_of("0123456789") != std::string::npos) throw bad();
    spec.seed = std::strtoull(seed.c_str(), &end, 10);
  }
  return spec;
}

int synthesize_weights(ir::Graph& graph, const SyntheticWeights& spec) {
  int replaced = 0;
  for (ir::Value& value : graph.values) {
    if (!value.constant.defined() || !is_floating(value.dtype)) continue;
    // One stream per constant, keyed by (seed, name): adding a constant changes no other.
    uint64_t state = spec.seed ^ zoo::fnv1a64(value.name);
    zoo::NormalGenerator gen(zoo::splitmix64(state));
    Tensor t(value.dtype, value.constant.shape());  // fresh storage: graph copies share constants
    for (int64_t i = 0; i < t.numel(); ++i) {
      double x = spec.sigma * gen.next_normal();
      if (value.dtype == DType::Float64)
        t.data<double>()[i] = x;
      else
        t.data<float>()[i] = static_cast<float>(x);
    }
    value.constant = t;
    ++replaced;
  }
  graph.name = "reproducer";
  return replaced;
}

int perturb_weights(ir::Graph& graph, uint64_t seed, double rel, int64_t min_elements) {
  int changed = 0;
  for (ir::Value& value : graph.values) {
    if (!value.constant.defined() || !is_floating(value.dtype) || value.constant.numel() < min_elements) continue;
    uint64_t state = seed ^ zoo::fnv1a64(value.name);
    zoo::NormalGenerator gen(zoo::splitmix64(state));
    Tensor t = value.constant.clone();  // fresh storage: graph copies share constants
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double f = 1.0 + rel * gen.next_normal();
      if (value.dtype == DType::Float64)
        t.data<double>()[i] *= f;
      else
        t.data<float>()[i] = static_cast<float>(t.data<float>()[i] * f);
    }
    value.constant = t;
    ++changed;
  }
  return changed;
}

}  // namespace lockstep::diff
