// Bisection through runners (issue 4 item 2): finds the first ONNX node whose value on the
// tested runner departs from the reference side, by extracting subgraphs of the IMPORTED graph
// (onnx names, no passes) that end at a cut point and running them in fresh processes.
//
// A cut after node k asks for its frontier: every value produced by nodes 0..k that a later node
// reads or that is a graph output. If node j is the first wrong node, some frontier value is
// wrong exactly for the cuts k >= j (faults propagate), so binary search over k names j after
// O(log N) runs; a linear pass over the nodes of the last stretch confirms it. The found node is
// then run alone on the test side with the reference's values as inputs: local or inherited.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "diff/metrics.h"
#include "diff/runner.h"
#include "ir/graph.h"

namespace lockstep::diff {

// Every value of the imported graph evaluated by lockstep's float64 reference (computed once,
// reusable across many bisections of the same model and inputs).
struct ReferenceTrace {
  ir::Graph graph;             // imported, inputs bound, dtypes/shapes annotated
  std::vector<Tensor> values;  // per ValueId (constants and inputs included)
  std::vector<double> noise;   // per ValueId: cpu float32 rel L2 vs reference; -1 unknown
};
std::shared_ptr<const ReferenceTrace> compute_reference_trace(
    const std::string& model_path, const std::vector<Tensor>& inputs,
    const std::map<std::string, Shape>& input_shapes = {}, bool calibrate = true);

struct ExternalBisectOptions {
  std::map<std::string, Shape> input_shapes;  // binds symbolic input dims
  bool calibrate = true;  // per-value tolerance from lockstep cpu's noise (diff/tolerance.h)
  double safety = 100;    // tolerance = clamp(safety * cpu noise, floor, cap)
  double floor = 1e-5;    // also the tolerance when not calibrating
  double cap = 1e-4;
  bool local_check = true;  // run the found node alone on the test side
  std::string work_dir;     // empty: a fresh temporary folder, removed unless keep_work
  bool keep_work = false;
  std::shared_ptr<const ReferenceTrace> trace;            // reuse a trace (same model and inputs)
  std::function<void(const std::string& line)> progress;  // one line per runner invocation
  // Persistent sides (Runner::persistent, `bisect --in-process`): run the whole model once on each
  // before the search, so that every subgraph is a later compilation in that process, as the
  // report's second in-process compile was.
  bool warm_up = false;
  // With warm_up: models each persistent side runs first, in order, with the same inputs: the steps
  // before the one `determinism` found wrong (its --keep folder), so the search starts in that state.
  std::vector<std::string> warm_up_models;
};

// One runner invocation of the search.
struct ExternalProbe {
  std::string phase;  // "outputs", "binary", "linear", "local"
  int cut = -1;       // node index (0-based) the cut follows
  int tensors = 0;    // how many values were compared
  bool bad = false;
  std::string worst_tensor;  // the value with the largest error / tolerance ratio
  Metrics worst;
  double tolerance = 0;
  double seconds = 0;
};

struct ExternalBisectResult {
  std::string ref_spec, test_spec;
  int node_count = 0;         // nodes of the imported graph
  bool diverged = false;      // false: every graph output agrees (then no node is named)
  int node_index = -1;        // 0-based index in the imported graph's topological order
  std::string node_name, op;  // the first divergent ONNX node
  std::string tensor;         // its worst output value
  Metrics metrics;            // that value against the reference
  double tolerance = 0;
  bool local_checked = false;
  Metrics local_metrics;  // the node alone, fed the reference's inputs
  double local_tolerance = 0;
  std::string verdict;       // "local", "inherited" or "" (no divergence / not checked)
  int test_invocations = 0;  // runs of the test side (each a fresh process for a command)
  int ref_invocations = 0;   // runs of the reference side (0 for lockstep's reference)
  int warm_up_runs = 0;      // whole-model runs before the search (warm_up on persistent sides)
  bool in_process = false;   // the test side is one persistent process (protocol v2)
  std::vector<ExternalProbe> probes;
  double seconds = 0;
};

// `ref`: lockstep's reference (float64 trace) or any runner; `test`: any runner. `inputs` in
// graph-input order. Throws Error for bad models, inputs or runner failures.
ExternalBisectResult bisect_external(const std::string& model_path, const Runner& ref,
                                     const Runner& test, const std::vector<Tensor>& inputs,
                                     const ExternalBisectOptions& options = {});

std::string format_external_bisect(const ExternalBisectResult& result);  // human-readable text
std::string external_bisect_json(const ExternalBisectResult& result);    // one JSON object

}  // namespace lockstep::diff
