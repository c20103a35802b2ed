#include "diff/bisect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "api/f64_default.h"

namespace lockstep::diff {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok: return "ok";
    case Verdict::Diverges: return "DIVERGES";
    case Verdict::Local: return "local";
    case Verdict::Inherited: return "inherited";
  }
  return "?";
}

const Backend& require_backend(const std::string& name) {
  const Backend* backend = find_backend(name);
  if (!backend)
    throw Error(ErrorCode::InvalidArgument, "unknown backend '" + name + "' (known: reference, cpu, cuda)");
  std::string why;
  if (!backend->available(&why)) throw Error(ErrorCode::DeviceUnavailable, backend->name() + ": " + why);
  return *backend;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr const char* kCalibrationBackend = "cpu";

// rel_l2, or +inf when the comparison is meaningless (NaN, shape mismatch).
double error_of(const Metrics& m) {
  if (!m.shape_match || m.nan_count_test > 0 || m.nan_count_ref > 0 || std::isnan(m.rel_l2)) return kInf;
  return m.rel_l2;
}

std::unique_ptr<Executable> compile_checked(const Backend& backend, const ir::Graph& graph, const Options& options) {
  for (const auto& node : graph.nodes)
    if (auto reason = backend.unsupported_reason(graph, node))
      throw Error(ErrorCode::UnsupportedOp, backend.name() + " backend: " + *reason, node.name, ir::op_name(node.op));
  return backend.compile(graph, options);
}

std::string op_label(const ir::Node& node) {
  std::string op = ir::op_name(node.op);
  if (!node.epilogue.empty()) op += "+" + std::to_string(node.epilogue.size());
  return op;
}

}  // namespace

struct Bisector::State {
  BisectConfig config;
  ir::Graph graph;
  std::vector<Tensor> inputs;
  std::vector<Tensor> ref_values;  // per ValueId: R's value (graph inputs included)
  std::vector<double> noise;       // per kernel
  std::vector<int> onnx_index;     // per kernel
  std::unordered_map<std::string, int> kernel_of;  // compiled node name -> index
  std::string calibration;
  std::vector<std::string> notes;
  mutable std::map<std::string, std::unique_ptr<Executable>> compiled;  // per tested backend
  std::map<std::string, std::vector<std::string>> f64_by_backend;      // Options::f64_accumulate

  Options options_for(const Backend& backend) const {
    Options o = config.options;
    if (auto it = f64_by_backend.find(backend.name()); it != f64_by_backend.end()) o.f64_accumulate = it->second;
    return o;
  }
  // Every run of every side draws its random ops from the configured seed.
  RunOptions run_options() const {
    RunOptions run;
    run.seed = config.seed;
    return run;
  }

  int kernel(const ir::Node& node) const {
    auto it = kernel_of.find(node.name);
    if (it == kernel_of.end())
      throw Error(ErrorCode::Internal, "a tap named kernel '" + node.name + "', which the compiled graph lacks");
    return it->second;
  }
};

Bisector::Bisector(const Model& model, std::vector<Tensor> inputs, BisectConfig config)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.config = std::move(config);
  s.inputs = std::move(inputs);
  // Decided on the whole model (the one-node graphs of the local replays are no voice), per
  // backend: each side compiles with the prefixes it would have in `lockstep run`.
  for (const Backend* b : all_backends())
    s.f64_by_backend[b->name()] = resolve_f64_accumulate_for(model.graph(), s.config.options, b->name());
  const Backend& ref_backend = require_backend(s.config.ref);
  const Backend& calib_backend = require_backend(kCalibrationBackend);
  const Backend& f64_backend = require_backend("reference");
  s.graph = prepare(model, s.config.options);
  const ir::Graph& g = s.graph;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    s.kernel_of[g.nodes[n].name] = static_cast<int>(n);
    s.onnx_index.push_back(model.graph().find_node(g.nodes[n].result_onnx_name()) + 1);
  }
  if (s.inputs.size() != g.inputs.size())
    throw Error(ErrorCode::InvalidArgument, "the model has " + std::to_string(g.inputs.size()) + " inputs, " +
                                                std::to_string(s.inputs.size()) + " were given");

  // Float64 values at every kernel boundary of the compiled graph itself (same fusion, same plan).
  std::vector<Tensor> f64(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) f64[static_cast<size_t>(g.inputs[i])] = s.inputs[i];
  {
    auto exe = compile_checked(f64_backend, g, s.options_for(f64_backend));
    RunOptions run = s.run_options();
    run.tap = [&](const ir::Node& node, int o, const Tensor& value) {
      f64[static_cast<size_t>(node.outputs[static_cast<size_t>(o)])] = value.clone();
    };
    exe->run(s.inputs, run);
  }

  // The noise floor: a clean float32 CPU run against float64, node by node.
  s.noise.assign(g.nodes.size(), 0.0);
  {
    auto exe = compile_checked(calib_backend, g, s.options_for(calib_backend));
    RunOptions run = s.run_options();
    run.tap = [&](const ir::Node& node, int o, const Tensor& value) {
      const Tensor& ref = f64[static_cast<size_t>(node.outputs[static_cast<size_t>(o)])];
      if (!ref.defined()) return;
      double& noise = s.noise[static_cast<size_t>(s.kernel(node))];
      noise = std::max(noise, error_of(compare(value, ref)));
    };
    exe->run(s.inputs, run);
  }
  auto g3 = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  s.calibration = "clean (fault-free) float32 cpu run against the float64 reference on the same compiled graph; "
                  "tolerance = max(" + g3(s.config.tolerance.floor) + ", min(" + g3(s.config.tolerance.cap) + ", " +
                  g3(s.config.tolerance.safety) + " x noise))";
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (exceeds(s.noise[n], kAgreeRelL2)) {
      s.notes.push_back("calibration: the cpu noise floor at '" + g.nodes[n].result_onnx_name() + "' (rel_l2 " +
                        g3(s.noise[n]) + ") is above the agreement bar; tolerances there are capped at " +
                        g3(s.config.tolerance.cap));
      break;
    }

  if (ref_backend.name() == "reference") {
    s.ref_values = std::move(f64);
  } else {
    f64.clear();
    s.ref_values.assign(g.values.size(), Tensor());
    for (size_t i = 0; i < g.inputs.size(); ++i) s.ref_values[static_cast<size_t>(g.inputs[i])] = s.inputs[i];
    auto exe = compile_checked(ref_backend, g, s.options_for(ref_backend));
    RunOptions run = s.run_options();
    run.tap = [&](const ir::Node& node, int o, const Tensor& value) {
      s.ref_values[static_cast<size_t>(node.outputs[static_cast<size_t>(o)])] = value.clone();
    };
    exe->run(s.inputs, run);
  }
}

Bisector::~Bisector() = default;

const ir::Graph& Bisector::graph() const { return state_->graph; }
const std::vector<double>& Bisector::noise() const { return state_->noise; }

const Tensor& Bisector::reference_output(size_t i) const {
  const ir::Graph& g = state_->graph;
  return state_->ref_values.at(static_cast<size_t>(g.outputs.at(i)));
}

ir::Graph one_node_graph(const ir::Graph& graph, int index) {
  const ir::Node& node = graph.nodes.at(static_cast<size_t>(index));
  ir::Graph out;
  out.name = graph.name + ":" + node.name;
  out.opset = graph.opset;
  std::map<ir::ValueId, ir::ValueId> remap;
  auto bring = [&](ir::ValueId id) -> ir::ValueId {
    if (id == ir::kNoValue) return ir::kNoValue;
    if (auto it = remap.find(id); it != remap.end()) return it->second;
    ir::ValueId nid = out.add_value(graph.value(id));
    if (!out.value(nid).constant.defined()) out.inputs.push_back(nid);
    remap[id] = nid;
    return nid;
  };
  ir::Node copy = node;
  for (auto& in : copy.inputs) in = bring(in);
  for (auto& step : copy.epilogue) step.operand = bring(step.operand);
  for (auto& o : copy.outputs) {
    if (o == ir::kNoValue) continue;
    ir::Value v = graph.value(o);
    v.constant = Tensor();
    o = out.add_value(std::move(v));
    out.outputs.push_back(o);
  }
  out.nodes.push_back(std::move(copy));
  return out;
}

double Bisector::local_error(const std::string& test, int node, const FaultSpec* fault) const {
  const State& s = *state_;
  const Backend& backend = require_backend(test);
  const ir::Graph& g = s.graph;
  ir::Graph one = one_node_graph(g, node);
  // The one-node graph's inputs are, in order, the original graph's values it reads.
  std::vector<Tensor> feeds;
  for (ir::ValueId in : one.inputs) {
    const ir::Value& v = one.value(in);
    ir::ValueId original = g.find_value(v.name);
    const Tensor& ref = original == ir::kNoValue ? Tensor() : s.ref_values[static_cast<size_t>(original)];
    if (!ref.defined())
      throw Error(ErrorCode::Internal, "no reference value for input '" + v.name + "' of the one-node replay",
                  g.nodes[static_cast<size_t>(node)].name);
    feeds.push_back(ref.dtype() == v.dtype ? ref : ref.to(v.dtype));
  }
  Options options = s.options_for(backend);
  options.observe.clear();
  auto exe = compile_checked(backend, one, options);
  RunOptions run = s.run_options();
  if (fault) run.fault_for_testing = make_fault(*fault);
  std::vector<Tensor> outs = exe->run(feeds, run);
  double worst = 0;
  size_t k = 0;
  for (ir::ValueId o : g.nodes[static_cast<size_t>(node)].outputs) {
    if (o == ir::kNoValue) continue;
    worst = std::max(worst, error_of(compare(outs.at(k++), s.ref_values[static_cast<size_t>(o)])));
  }
  return worst;
}

BisectReport Bisector::run(const std::string& test, const FaultSpec* fault, std::optional<LocalMode> local) const {
  const LocalMode mode = local.value_or(state_->config.local);
  const State& s = *state_;
  const ir::Graph& g = s.graph;
  const Backend& backend = require_backend(test);
  if (fault && backend.name() == "reference")
    throw Error(ErrorCode::InvalidArgument, "test-only faults are planted by the cpu and cuda executors, not the reference");
  if (fault && g.find_node(fault->node) < 0)
    throw Error(ErrorCode::InvalidArgument, "fault: no kernel implements ONNX node '" + fault->node + "'");

  BisectReport report;
  report.ref = s.config.ref;
  report.test = backend.name();
  report.calibration = s.calibration;
  report.tolerance = s.config.tolerance;
  report.notes = s.notes;
  if (fault) report.fault = std::string(fault_kind_name(fault->kind)) + " " + std::to_string(fault->amount) + " at '" +
                            fault->node + "' (test-only)";
  report.rows.resize(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    NodeRow& row = report.rows[n];
    row.index = static_cast<int>(n) + 1;
    row.onnx_index = s.onnx_index[n];
    row.onnx_name = g.nodes[n].result_onnx_name();
    row.op = op_label(g.nodes[n]);
    row.noise = s.noise[n];
    row.tolerance = calibrated_tolerance(row.noise, s.config.tolerance);
    row.error = -1;  // set by the first tap
  }

  auto& exe = s.compiled[backend.name()];
  if (!exe) exe = compile_checked(backend, g, s.options_for(backend));
  RunOptions run = s.run_options();
  if (fault) run.fault_for_testing = make_fault(*fault);
  run.tap = [&](const ir::Node& node, int o, const Tensor& value) {
    const Tensor& ref = s.ref_values[static_cast<size_t>(node.outputs[static_cast<size_t>(o)])];
    if (!ref.defined()) return;
    NodeRow& row = report.rows[static_cast<size_t>(s.kernel(node))];
    Metrics m = compare(value, ref);
    double e = error_of(m);
    if (e > row.error || row.error < 0) {
      row.error = e;
      row.metrics = m;
      row.output_index = o;
    }
  };
  std::vector<Tensor> outs = exe->run(s.inputs, run);
  for (size_t i = 0; i < g.outputs.size() && i < outs.size(); ++i) {
    const Tensor& ref = s.ref_values[static_cast<size_t>(g.outputs[i])];
    if (!ref.defined()) continue;
    Metrics m = compare(outs[i], ref);
    report.outputs.push_back({g.value(g.outputs[i]).name, m, agrees(m)});
  }

  for (size_t n = 0; n < report.rows.size(); ++n) {
    NodeRow& row = report.rows[n];
    if (row.error < 0) {
      row.error = kInf;
      report.notes.push_back("no tap for kernel '" + g.nodes[n].name + "'");
    }
    bool bad = exceeds(row.error, row.tolerance);
    if (bad && report.first_divergent < 0) report.first_divergent = static_cast<int>(n);
    bool replay = mode == LocalMode::All ||
                  (bad && (mode == LocalMode::Divergent || report.first_divergent == static_cast<int>(n)));
    if (replay) row.local_error = local_error(test, static_cast<int>(n), fault);
    if (!bad) row.verdict = Verdict::Ok;
    else if (!row.local_error) row.verdict = Verdict::Diverges;
    else row.verdict = exceeds(*row.local_error, row.tolerance) ? Verdict::Local : Verdict::Inherited;
  }
  return report;
}

}  // namespace lockstep::diff
