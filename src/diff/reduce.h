// Minimal reproducers (issue 4 item 3): the first divergent node alone, its non-constant inputs
// as graph inputs fed with the reference's values, its constants as initializers; re-checked on
// both sides, optionally with synthetic weights, written with a manifest of SHA-256 sums and
// the commands that reproduce it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diff/external_bisect.h"
#include "diff/synth.h"

namespace lockstep::diff {

struct ReduceOptions {
  ExternalBisectOptions bisect;               // how the divergent node is found
  std::optional<SyntheticWeights> synthetic;  // --synthetic-weights
  std::string lockstep_command = "lockstep";  // how the manifest's commands call lockstep
};

struct ReduceResult {
  ExternalBisectResult bisect;
  bool diverged = false;  // false: nothing written (the sides agree)
  std::string out_dir;
  std::vector<std::string> files;  // relative to out_dir, manifest.json last
  int kept_nodes = 0;              // nodes of the reduced model
  bool still_diverges = false;     // re-check of the reduced model
  Metrics recheck;                 // its worst output on test vs ref
  bool synthetic = false;
  bool synthetic_diverges = false;  // the re-check with synthetic weights
  Metrics synthetic_recheck;
  std::vector<std::string> commands;  // as written to the manifest
};

// Writes into a temporary folder beside `out_dir`, renamed to `out_dir` at the end (which must
// not exist, or be an empty folder).
ReduceResult reduce(const std::string& model_path, const Runner& ref, const Runner& test,
                    const std::vector<Tensor>& inputs, const std::string& out_dir,
                    const ReduceOptions& options = {});

std::string format_reduce(const ReduceResult& result);

}  // namespace lockstep::diff
