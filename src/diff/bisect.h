// `lockstep bisect` for lockstep's own backends: every kernel boundary of ONE compiled graph
// (same fusion, same memory plan) is compared through taps between a reference side R and a
// tested backend T; the first node whose error exceeds its calibrated tolerance is the divergent
// node, and a one-node replay of the reference's inputs on T tells whether the error is made
// there ("local") or carried in ("inherited"). docs/tools.md explains the numbers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diff/fault.h"
#include "diff/metrics.h"
#include "diff/tolerance.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::diff {

// Where the one-node replay runs: at the first divergent node only, at every node above its
// tolerance, or at every node.
enum class LocalMode { First, Divergent, All };

struct BisectConfig {
  std::string ref = "reference";  // the reference side: "reference" (float64) or a lockstep backend
  Options options;                // threads, input_shapes, observe, fuse — used by prepare() and compile()
  ToleranceConfig tolerance;
  LocalMode local = LocalMode::First;
  uint64_t seed = 0;  // RunOptions::seed of every run: random ops without a `seed` attribute draw as `lockstep run --seed`
};

enum class Verdict { Ok, Diverges, Local, Inherited };
const char* verdict_name(Verdict v);  // "ok", "DIVERGES", "local", "inherited"

struct NodeRow {
  int index = 0;            // 1-based position in the compiled graph (kernel order)
  int onnx_index = 0;       // 1-based position of onnx_name in the model as imported; 0 if absent
  std::string onnx_name;    // the ONNX node whose value this kernel produces
  std::string op;           // "Conv", or "Conv+2" with two fused epilogue steps
  int output_index = 0;     // the output with the largest error (Split has several)
  Metrics metrics;          // of that output, test against reference side
  double error = 0;         // rel_l2 of that output; +inf on NaN or shape mismatch
  double noise = 0;         // clean float32 CPU against float64 at this node (the calibration)
  double tolerance = 0;     // calibrated_tolerance(noise)
  std::optional<double> local_error;  // one-node replay on T of the reference side's inputs
  Verdict verdict = Verdict::Ok;
};

struct OutputRow {
  std::string name;
  Metrics metrics;
  bool agrees = true;  // diff::agrees
};

struct BisectReport {
  std::string model;        // as given (for the reports)
  std::string ref, test;
  std::string fault;        // description of a planted test-only fault, empty normally
  std::string calibration;  // how the noise floor was measured
  ToleranceConfig tolerance;
  std::vector<NodeRow> rows;        // one per kernel boundary, in kernel order
  std::vector<OutputRow> outputs;   // graph outputs
  int first_divergent = -1;         // index into rows, -1 when every node is within tolerance
  std::vector<std::string> notes;   // calibration warnings and the like
  bool diverged() const { return first_divergent >= 0; }
};

// Prepares the graph once and runs, with taps at every kernel boundary, the float64 reference and
// the clean CPU calibration run (and R when R is not the reference). One Bisector serves any
// number of tested backends and planted faults: the expensive reference run happens once.
class Bisector {
 public:
  Bisector(const Model& model, std::vector<Tensor> inputs, BisectConfig config);
  ~Bisector();
  Bisector(const Bisector&) = delete;
  Bisector& operator=(const Bisector&) = delete;

  const ir::Graph& graph() const;  // the compiled graph every side runs
  // Bisects backend `test` against R. `fault` is test-only: planted in every run on T. `local`
  // overrides the config's LocalMode for this run. T's compiled program is cached (compile is a
  // pure function of graph, target and options; faults act at run time).
  BisectReport run(const std::string& test, const FaultSpec* fault = nullptr,
                   std::optional<LocalMode> local = std::nullopt) const;
  // The one-node replay: node `node` (0-based kernel index) alone, fed R's values of its
  // non-constant inputs (cast to their IR dtype), compiled and run on `test`; the largest rel_l2
  // of its outputs against R's.
  double local_error(const std::string& test, int node, const FaultSpec* fault = nullptr) const;
  const std::vector<double>& noise() const;  // per kernel
  const Tensor& reference_output(size_t i) const;  // R's value of graph output i

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The one-node graph of local_error: the node with its epilogue, its constant inputs and
// operands, every other input a graph input (same names, dtypes, shapes); no memory plan.
ir::Graph one_node_graph(const ir::Graph& graph, int node);

// Throws Error(InvalidArgument) when `name` is no lockstep backend, DeviceUnavailable when it
// cannot run here.
const Backend& require_backend(const std::string& name);

}  // namespace lockstep::diff
