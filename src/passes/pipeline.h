// The pass pipeline: one linear function. Every rewrite a pass makes is one counted
// "application" so that --opt-bisect-limit=N can stop after exactly N of them.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace lockstep::passes {

struct PipelineOptions {
  int opt_bisect_limit = -1;      // -1: no limit
  bool print_after_all = false;   // dump the IR after each pass
  std::ostream* dump = nullptr;   // where dumps go; nullptr = std::cerr
  bool fuse = true;
  std::vector<std::string> observe;  // ONNX node names whose values fusion must keep observable
  bool plan = true;
  int64_t max_memory_bytes = 0;   // 0: no cap on the arena
  // Data moved out of constants (fold_support.h's moves_data) is folded up to this many bytes;
  // run-time shape segments pass kMoveAtRunTimeBytes.
  int64_t fold_moved_max_bytes = INT64_MAX;
  // Called after each pass with its name, the graph as it stands and the applications so far
  // (tests run the reference here).
  std::function<void(const std::string& pass, const ir::Graph& graph, int applications)> after_pass;
  // Test-only (tests/diff/bisect_passes_test.cpp): when application number `fault_application`
  // has happened, `fault` corrupts the graph once, right after the pass that made it, so that
  // bisect-passes can be checked to name exactly that application. Never set outside tests.
  int fault_application = -1;
  std::function<void(ir::Graph& graph)> fault;
};

// Counts pass applications and answers whether the next one may happen.
class PassContext {
 public:
  explicit PassContext(const PipelineOptions& options) : options_(options) {}
  // Call before each rewrite; false once the bisect limit is reached (then skip the rewrite).
  bool should_apply(const char* pass, const std::string& what);
  int applications() const { return applications_; }
  const std::vector<std::string>& log() const { return log_; }  // "#N pass: what"
  const PipelineOptions& options() const { return options_; }

 private:
  PipelineOptions options_;
  int applications_ = 0;
  std::vector<std::string> log_;
};

// Sets the shapes of graph inputs: `shapes` (keyed by input name) binds symbolic dims or overrides
// them, with the same rank; an input left with an unknown dim is an Error(ShapeMismatch) naming the
// input and its dim_param; a name that is no graph input is an Error(InvalidArgument).
void bind_inputs(ir::Graph& graph, const std::map<std::string, Shape>& shapes);

// bind_inputs must have run. Runs verify, infer_shapes, fold_constants, eliminate_dead_code,
// simplify_algebra, fuse_epilogues, eliminate_dead_code, plan_memory (+ check), verify.
// Returns the log of applications. Tested in tests/passes/pipeline_test.cpp and, on the shared
// models, tests/passes/preserve_reference_test.cpp.
std::vector<std::string> run_pipeline(ir::Graph& graph, const PipelineOptions& options);

// Whether some node's output shape is known only at run time (such a graph cannot be planned).
bool has_run_time_shapes(const ir::Graph& graph);
// The pipeline's last step: plan_memory and check_memory_plan, unless shapes are left to run time
// (false, nothing planned). For backends that plan for themselves (Backend::plans_memory).
bool plan_when_shapes_known(ir::Graph& graph, int64_t max_memory_bytes);

}  // namespace lockstep::passes
