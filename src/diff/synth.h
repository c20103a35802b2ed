// Synthetic weights for shareable reproducers: every floating constant replaced by seeded
// N(0, sigma) values (zoo::NormalGenerator, portable), one stream per constant keyed by
// (seed, name); topology, names, dtypes and shapes kept. The exporter writes no doc strings or
// metadata, so the written file carries nothing else of the original.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace lockstep::diff {

struct SyntheticWeights {
  double sigma = 0.1;
  uint64_t seed = 0;
};

// "SIGMA" or "SIGMA,SEED" (e.g. "0.1,0"); Error(InvalidArgument) otherwise.
SyntheticWeights parse_synthetic_weights(const std::string& text);

// Returns how many constants were replaced.
int synthesize_weights(ir::Graph& graph, const SyntheticWeights& spec);

// Other weights of the same model: every floating constant of `min_elements` or more (the weights,
// not the scalars a formula uses) scaled elementwise by 1 + rel * N(0, 1), seeded per (seed, name).
// The model still behaves as itself (a voice keeps its durations) but no output bit is likely the
// same: what `determinism` runs to catch a cache keyed on structure. Returns how many were changed.
int perturb_weights(ir::Graph& graph, uint64_t seed, double rel = 1e-3, int64_t min_elements = 16);

}  // namespace lockstep::diff
