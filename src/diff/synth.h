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

}  // namespace lockstep::diff
