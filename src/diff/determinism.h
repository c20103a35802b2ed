// `lockstep determinism`: SHA-256 of every output per run, across fresh processes (driven by the
// CLI) and across an in-process sequence (compile A, run; compile A's graph with other weights as
// B and C, run; compile A again, from another path too, run). Every in-process step must give the
// bits a fresh process gives for the same model and inputs: A's steps A's, B's B's, C's C's — so a
// runtime that serves a stale compiled model (C answered from B's cache) fails, and is named.
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
  bool of_a = true;                 // compared: with A's first fresh run, or with `expect`'s fresh run
  std::string expect;               // the fresh result this run must equal ("A", "B", "A at length B"); "" none
  std::string model;                // runners: the file the step ran (to replay the steps before one)
};

struct DeterminismReport {
  std::string backend;
  std::vector<std::string> output_names;
  std::vector<DeterminismRun> runs;
  // Fresh-process bits of every model the in-process steps ran besides A ("B", "C", "A at length
  // B"); A's are its fresh#N runs. A step whose expected result is missing is compared with none.
  std::map<std::string, std::vector<std::string>> fresh;
  std::vector<std::string> differences;  // empty: every run of A gave the same bits
  std::vector<std::string> notes;        // what did not run, and why (not failures)
  std::string first_change;              // the first run whose bits differ from its fresh result; "" if none
  bool identical() const { return differences.empty(); }
};

struct OtherGraph {
  std::string label;  // "B", "C", "A from another path"
  Model model;
  std::vector<Tensor> inputs;
  std::string expect;  // the fresh result its bits must equal: "A" (A itself) or its own label
  std::string path;    // the model as a file (for a runner, and a fresh process)
};

std::vector<std::string> output_hashes(const std::vector<Tensor>& outputs);

// The sequence's other models for A: B and C, A's graph with perturbed weights (seeds 1 and 2),
// written into `dir` as B.onnx and C.onnx; with `a_path`, A loaded again from a copy at another
// path ("A from another path").
std::vector<OtherGraph> sequence_others(const Model& a, const std::vector<Tensor>& inputs, const std::string& dir,
                                        const std::string& a_path = "");

// A's inputs at another length (the sequence's "A1 at length B"): a voice's shorter sentence, or
// every symbolic dim halved; empty when the model has no size to vary.
std::vector<Tensor> other_length_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs);

// `tensors` in graph-input order, keyed by the inputs' names (what runners and .npz files take).
std::map<std::string, Tensor> by_input_name(const ir::Graph& graph, const std::vector<Tensor>& tensors);

// Compile A and run it twice; compile and run each other graph (kept alive); compile A again and
// run. Errors are recorded per run, not thrown.
std::vector<DeterminismRun> in_process_sequence(const Model& a, const std::vector<Tensor>& inputs,
                                                const std::string& backend, const Options& options,
                                                const std::vector<OtherGraph>& others);

// Fresh runs of A against the first successful one; every in-process step against the fresh bits
// of its own model and inputs (report.fresh, or A's first fresh run), naming a step that returned
// another model's bits ("C gave B's bits: stale compiled state"). A failed run is a difference too.
// Sets first_change.
void find_differences(DeterminismReport& report);

// The in-process sequence for an external runner: ONE persistent process of `command` (protocol
// v2) serves A1, A1 again, [A at length B,] B, C, A2, A from another path, where B and C are A's
// graph with perturbed weights (sequence_others), written into `scratch_dir`. Each model other than
// A is also run once in a fresh process of `command` (one call, protocol v1) into `fresh`. A runner
// that does not speak v2 gives no runs and a note in `note`.
std::vector<DeterminismRun> runner_in_process_sequence(const std::string& command, const std::string& model_path,
                                                       const std::map<std::string, Tensor>& inputs,
                                                       const std::vector<std::string>& outputs,
                                                       const std::string& scratch_dir, std::string* note,
                                                       std::map<std::string, std::vector<std::string>>* fresh);

}  // namespace lockstep::diff
