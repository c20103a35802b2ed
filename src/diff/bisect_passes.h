// `lockstep bisect-passes`: binary search on the pipeline's --opt-bisect-limit for the first pass
// application after which a backend's output moves beyond tolerance against the float64
// reference of the unoptimized graph; reports that application and the IR before and after it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "diff/tolerance.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::diff {

struct BisectPassesConfig {
  std::string backend = "cpu";
  Options options;  // threads, input_shapes, observe, fuse, max_memory_bytes (opt_bisect_limit is ignored)
  // Tolerance on the outputs' rel_l2: max(kAgreeRelL2, safety x the error with no pass applied).
  double safety = kToleranceSafety;
  // Test-only: corrupt the graph once application `fault_application` has happened
  // (passes::PipelineOptions::fault). Never set by the CLI.
  int fault_application = -1;
  std::function<void(ir::Graph&)> fault;
};

struct PassProbe {
  int limit = 0;       // applications allowed
  double error = 0;    // largest rel_l2 over the outputs (+inf on NaN)
  bool within = true;  // error <= tolerance
};

struct BisectPassesReport {
  std::string backend;
  int total_applications = 0;
  std::vector<std::string> log;  // the full pipeline's "#N pass: what" lines
  double baseline_error = 0;     // no application
  double tolerance = 0;
  std::vector<PassProbe> probes;  // in the order tried
  int culprit = 0;                // 1-based application number; 0 when none moves the output
  std::string culprit_line;       // its log line
  std::string ir_before, ir_after;  // ir::print at limits culprit-1 and culprit
  bool baseline_diverges = false;   // even with no application the backend is beyond tolerance
  bool found() const { return culprit > 0; }
};

BisectPassesReport bisect_passes(const Model& model, const std::vector<Tensor>& inputs,
                                 const BisectPassesConfig& config);

// The model's graph with bound inputs through the pipeline stopped after `limit` applications
// (-1: all); `log` receives the applications made.
ir::Graph prepare_with_limit(const Model& model, const BisectPassesConfig& config, int limit,
                             std::vector<std::string>* log = nullptr);

}  // namespace lockstep::diff
