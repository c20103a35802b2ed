// `lockstep determinism`: SHA-256 of every output per run, across fresh processes (driven by the
// CLI) and across an in-process sequence (compile A, run; compile other graphs, run; compile A
// again, run). Any difference between two runs of A is a failure.
#pragma once

#include <map>
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
  std::vector<std::string> notes;        // what did not run, and why (not failures)
  std::string first_change;              // the first run of A whose bits differ from the first; "" if none
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
// Sets first_change.
void find_differences(DeterminismReport& report);

// The in-process sequence for an external runner: ONE persistent process of `command` (protocol
// v2) serves A1, A1 again, B, C, A2, where B and C are A's graph with other (seeded synthetic)
// weights, the same node names and shapes, written into `scratch_dir`. A runner that does not speak
// v2 gives no runs and a note in `note`.
std::vector<DeterminismRun> runner_in_process_sequence(const std::string& command, const std::string& model_path,
                                                       const std::map<std::string, Tensor>& inputs,
                                                       const std::vector<std::string>& outputs,
                                                       const std::string& scratch_dir, std::string* note);

}  // namespace lockstep::diff
