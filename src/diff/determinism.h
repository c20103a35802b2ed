// `lockstep determinism`: SHA-256 of every output per run, across fresh processes (driven by the
// CLI) and across an in-process sequence (compile A, run; compile other graphs, run; compile A
// again, run). Any difference between two runs of A is a failure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep::diff {

struct DeterminismRun {
  std::string mode;                 // "fresh#3", "A1", "A1 again", "B", "A2", ...
  std::vector<std::string> sha256;  // per output
  std::string error;                // non-empty: the run failed
  bool of_a = true;                 // false for the other graphs (listed, not compared)
};

struct DeterminismReport {
  std::string backend;
  std::vector<std::string> output_names;
  std::vector<DeterminismRun> runs;
  std::vector<std::string> differences;  // empty: every run of A gave the same bits
  bool identical() const { return differences.empty(); }
};

struct OtherGraph {
  std::string label;  // "B", "C"
  Model model;
  std::vector<Tensor> inputs;
};

std::vector<std::string> output_hashes(const std::vector<Tensor>& outputs);

// Compile A and run it twice; compile and run each other graph (kept alive); compile A again and
// run. Errors are recorded per run, not thrown.
std::vector<DeterminismRun> in_process_sequence(const Model& a, const std::vector<Tensor>& inputs,
                                                const std::string& backend, const Options& options,
                                                const std::vector<OtherGraph>& others);

// Every run of A against the first successful one; a failed run of A is a difference too.
void find_differences(DeterminismReport& report);

}  // namespace lockstep::diff
