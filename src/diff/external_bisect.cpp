#include "diff/external_bisect.h"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "diff/extract.h"
#include "diff/metrics_json.h"
#include "diff/tolerance.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/pipeline.h"
#include "reference/evaluate.h"

namespace lockstep::diff {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Values whose noise the cpu run did not see (removed by passes) inherit their inputs' worst.
void propagate_noise(const ir::Graph& g, std::vector<double>& noise) {
  for (const ir::Node& node : g.nodes) {
    double worst = 0;
    for (ir::ValueId in : node.inputs)
      if (in != ir::kNoValue) worst = std::max(worst, noise[in]);
    for (ir::ValueId out : node.outputs)
      if (out != ir::kNoValue && noise[out] < 0) noise[out] = worst;
  }
}

void calibrate_noise(const std::string& model_path, const ir::Graph& g,
                     const std::vector<Tensor>& values, const std::vector<Tensor>& inputs,
                     const std::map<std::string, Shape>& shapes, std::vector<double>& noise) {
  Model model = Model::load(model_path);
  Options options;
  options.fuse = false;
  options.input_shapes = shapes;
  auto exe = compile(model, "cpu", options);
  RunOptions run;
  run.tap = [&](const ir::Node& node, int output_index, const Tensor& value) {
    const std::string& name = exe->graph().value(node.outputs[output_index]).name;
    ir::ValueId v = g.find_value(name);
    if (v == ir::kNoValue || !values[v].defined()) return;
    Metrics m = compare(value, values[v]);
    noise[v] = m.shape_match ? m.rel_l2 : -1;
  };
  exe->run(inputs, run);
  for (ir::ValueId v : g.inputs) noise[v] = 0;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined()) noise[v] = 0;
  propagate_noise(g, noise);
}

class Search {
 public:
  Search(const std::string& model_path, const Runner& ref, const Runner& test,
         const std::vector<Tensor>& inputs, const ExternalBisectOptions& options)
      : ref_(ref), test_(test), options_(options) {
    trace_ = options.trace ? options.trace
                           : compute_reference_trace(model_path, inputs, options.input_shapes,
                                                     options.calibrate);
    const ir::Graph& g = trace_->graph;
    if (inputs.size() != g.inputs.size())
      throw Error(ErrorCode::MissingInput, "the model has " + std::to_string(g.inputs.size()) +
                                               " inputs, " + std::to_string(inputs.size()) +
                                               " were given");
    for (size_t i = 0; i < inputs.size(); ++i) model_inputs_[g.value(g.inputs[i]).name] = inputs[i];
    last_use_.assign(g.values.size(), -1);
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (ir::ValueId in : g.nodes[n].inputs)
        if (in != ir::kNoValue) last_use_[in] = static_cast<int>(n);
    for (ir::ValueId out : g.outputs) last_use_[out] = static_cast<int>(g.nodes.size());
    if (options.work_dir.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "lockstep-bisect-XXXXXX").string();
      if (!mkdtemp(tmpl.data()))
        throw Error(ErrorCode::Io, "cannot create a temporary folder in " + tmpl);
      work_ = tmpl;
      own_work_ = true;
    } else {
      work_ = options.work_dir;
      fs::create_directories(work_);
    }
  }
  ~Search() {
    std::error_code ec;
    if (own_work_ && !options_.keep_work) fs::remove_all(work_, ec);
  }

  ExternalBisectResult run() {
    auto start = Clock::now();
    const ir::Graph& g = trace_->graph;
    ExternalBisectResult r;
    r.ref_spec = ref_.spec();
    r.test_spec = test_.spec();
    r.node_count = static_cast<int>(g.nodes.size());
    int n = r.node_count;
    if (n == 0) throw Error(ErrorCode::InvalidModel, "the model has no nodes to bisect");
    if (!probe(n - 1, "outputs", r).bad) {
      r.seconds = since(start);
      return r;
    }
    r.diverged = true;
    int lo = -1, hi = n - 1;  // cut lo agrees (nothing ran), cut hi diverges
    while (hi - lo > 1) {
      int mid = lo + (hi - lo) / 2;
      if (probe(mid, "binary", r).bad)
        hi = mid;
      else
        lo = mid;
    }
    // Linear pass over the last stretch: with frontier cuts it is the one node `hi`; its own
    // outputs must be the new bad values (they are unless the runner's noise moved between runs).
    const ir::Node& node = g.nodes[hi];
    ProbeOutcome own = compare_values(node.outputs, last_values_.at(hi),
                                      ref_.is_reference() ? nullptr : &last_ref_.at(hi));
    if (!own.bad) {
      // The bad value at cut hi is not this node's: look at its own outputs alone.
      own = probe_values(hi, "linear", node.outputs, r);
    }
    r.node_index = hi;
    r.node_name = node.name;
    r.op = ir::op_name(node.op);
    r.tensor = own.worst_tensor;
    r.metrics = own.worst;
    r.tolerance = own.tolerance;
    if (options_.local_check) local_check(hi, r);
    r.seconds = since(start);
    return r;
  }

 private:
  struct ProbeOutcome {
    bool bad = false;
    std::string worst_tensor;
    Metrics worst;
    double tolerance = 0;
    double ratio = -1;
  };

  double tolerance_of(ir::ValueId v) const {
    double noise = trace_->noise.empty() ? -1 : trace_->noise[v];
    if (!options_.calibrate || noise < 0) return options_.floor;
    return calibrated_tolerance(noise, {options_.safety, options_.floor, options_.cap});
  }

  ProbeOutcome compare_values(const std::vector<ir::ValueId>& ids, const NamedTensors& test,
                              const NamedTensors* ref = nullptr) const {
    const ir::Graph& g = trace_->graph;
    ProbeOutcome o;
    for (ir::ValueId v : ids) {
      if (v == ir::kNoValue) continue;
      const std::string& name = g.value(v).name;
      auto t = test.find(name);
      if (t == test.end()) continue;
      const Tensor& expected = ref ? ref->at(name) : trace_->values[v];
      Metrics m = compare(t->second, expected);
      double tol = tolerance_of(v);
      bool bad = !m.shape_match || m.nan_count_test != m.nan_count_ref || exceeds(m.rel_l2, tol);
      double ratio = !m.shape_match || !std::isfinite(m.rel_l2)
                         ? std::numeric_limits<double>::infinity()
                         : m.rel_l2 / tol;
      if (m.nan_count_test > 0 && m.nan_count_ref == 0)
        ratio = std::numeric_limits<double>::infinity();
      if (bad) o.bad = true;
      if (ratio > o.ratio || o.worst_tensor.empty()) {
        o.ratio = ratio;
        o.worst_tensor = name;
        o.worst = m;
        o.tolerance = tol;
      }
    }
    return o;
  }

  std::vector<ir::ValueId> frontier(int cut) const {
    const ir::Graph& g = trace_->graph;
    std::vector<ir::ValueId> ids;
    for (int j = 0; j <= cut; ++j)
      for (ir::ValueId out : g.nodes[j].outputs)
        if (out != ir::kNoValue && last_use_[out] > cut) ids.push_back(out);
    return ids;
  }

  ExternalProbe probe(int cut, const char* phase, ExternalBisectResult& r) {
    probe_values(cut, phase, frontier(cut), r);
    return r.probes.back();
  }

  // Extracts the subgraph computing `ids` from the model inputs, runs both sides, compares.
  ProbeOutcome probe_values(int cut, const char* phase, const std::vector<ir::ValueId>& ids,
                            ExternalBisectResult& r) {
    const ir::Graph& g = trace_->graph;
    auto start = Clock::now();
    std::vector<std::string> names;
    for (ir::ValueId v : ids)
      if (v != ir::kNoValue) names.push_back(g.value(v).name);
    ir::Graph sub = extract_subgraph(g, names);
    fs::path dir = fs::path(work_) / ("probe_" + std::to_string(r.probes.size()));
    fs::create_directories(dir);
    std::string model = (dir / "model.onnx").string();
    onnx::export_model(sub, model);
    NamedTensors feeds;
    for (ir::ValueId v : sub.inputs) feeds[sub.value(v).name] = model_inputs_.at(sub.value(v).name);
    NamedTensors test = test_.run(model, feeds, names, (dir / "test").string());
    ++r.test_invocations;
    NamedTensors ref;
    if (!ref_.is_reference()) {
      ref = ref_.run(model, feeds, names, (dir / "ref").string());
      ++r.ref_invocations;
    }
    ProbeOutcome o = compare_values(ids, test, ref_.is_reference() ? nullptr : &ref);
    last_values_[cut] = test;
    if (!ref_.is_reference()) last_ref_[cut] = ref;
    record(r, phase, cut, static_cast<int>(names.size()), o, since(start));
    return o;
  }

  void record(ExternalBisectResult& r, const char* phase, int cut, int tensors,
              const ProbeOutcome& o, double secs) {
    ExternalProbe p;
    p.phase = phase;
    p.cut = cut;
    p.tensors = tensors;
    p.bad = o.bad;
    p.worst_tensor = o.worst_tensor;
    p.worst = o.worst;
    p.tolerance = o.tolerance;
    p.seconds = secs;
    r.probes.push_back(p);
    if (options_.progress) {
      std::ostringstream line;
      line << "[" << r.probes.size() << "] " << phase << " cut after node " << cut + 1 << "/"
           << r.node_count << " (" << trace_->graph.nodes[cut].name << "): " << tensors
           << " tensor(s), " << (o.bad ? "DIVERGES" : "agrees") << ", worst " << o.worst_tensor
           << " rel_l2 " << o.worst.rel_l2 << " (tol " << o.tolerance << "), " << secs << " s";
      options_.progress(line.str());
    }
  }

  // The node alone on the test side, fed the reference side's values of its inputs.
  void local_check(int index, ExternalBisectResult& r) {
    const ir::Graph& g = trace_->graph;
    const ir::Node& node = g.nodes[index];
    auto start = Clock::now();
    std::vector<std::string> in_names, out_names;
    std::vector<ir::ValueId> in_ids;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && !g.is_constant(v) &&
          std::find(in_ids.begin(), in_ids.end(), v) == in_ids.end()) {
        in_ids.push_back(v);
        in_names.push_back(g.value(v).name);
      }
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue) out_names.push_back(g.value(v).name);
    NamedTensors ref_inputs;
    if (ref_.is_reference()) {
      for (ir::ValueId v : in_ids) ref_inputs[g.value(v).name] = trace_->values[v];
    } else {
      // The reference side's values of the node's inputs, from a run that ends there.
      std::vector<std::string> wanted;
      for (const auto& name : in_names)
        if (!model_inputs_.count(name)) wanted.push_back(name);
      if (!wanted.empty()) {
        ir::Graph up = extract_subgraph(g, wanted);
        fs::path dir = fs::path(work_) / "local_inputs";
        fs::create_directories(dir);
        onnx::export_model(up, (dir / "model.onnx").string());
        NamedTensors feeds;
        for (ir::ValueId v : up.inputs)
          feeds[up.value(v).name] = model_inputs_.at(up.value(v).name);
        ref_inputs = ref_.run((dir / "model.onnx").string(), feeds, wanted, (dir / "ref").string());
        ++r.ref_invocations;
      }
      for (const auto& name : in_names)
        if (model_inputs_.count(name)) ref_inputs[name] = model_inputs_.at(name);
    }
    // Cast to the declared dtype: the reference keeps floating values in float64.
    for (ir::ValueId v : in_ids) {
      Tensor& t = ref_inputs.at(g.value(v).name);
      if (t.dtype() != g.value(v).dtype) t = t.to(g.value(v).dtype);
    }
    ir::Graph one = extract_subgraph(g, out_names, in_names);
    fs::path dir = fs::path(work_) / "local";
    fs::create_directories(dir);
    std::string model = (dir / "model.onnx").string();
    onnx::export_model(one, model);
    NamedTensors test = test_.run(model, ref_inputs, out_names, (dir / "test").string());
    ++r.test_invocations;
    ProbeOutcome o;
    if (ref_.is_reference()) {
      o = compare_values(node.outputs, test);
    } else {
      NamedTensors ref = ref_.run(model, ref_inputs, out_names, (dir / "ref").string());
      ++r.ref_invocations;
      o = compare_values(node.outputs, test, &ref);
    }
    r.local_checked = true;
    r.local_metrics = o.worst;
    r.local_tolerance = o.tolerance;
    r.verdict = o.bad ? "local" : "inherited";
    record(r, "local", index, static_cast<int>(out_names.size()), o, since(start));
  }

  const Runner& ref_;
  const Runner& test_;
  ExternalBisectOptions options_;
  std::shared_ptr<const ReferenceTrace> trace_;
  NamedTensors model_inputs_;
  std::vector<int> last_use_;
  std::map<int, NamedTensors> last_values_, last_ref_;
  std::string work_;
  bool own_work_ = false;
};

std::string num(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

}  // namespace

std::shared_ptr<const ReferenceTrace> compute_reference_trace(
    const std::string& model_path, const std::vector<Tensor>& inputs,
    const std::map<std::string, Shape>& input_shapes, bool calibrate) {
  auto trace = std::make_shared<ReferenceTrace>();
  ir::Graph& g = trace->graph;
  g = onnx::import_model(model_path);
  if (inputs.size() != g.inputs.size())
    throw Error(ErrorCode::MissingInput, model_path + " has " + std::to_string(g.inputs.size()) +
                                             " inputs, " + std::to_string(inputs.size()) +
                                             " were given");
  std::map<std::string, Shape> shapes = input_shapes;
  for (size_t i = 0; i < inputs.size(); ++i)
    shapes.emplace(g.value(g.inputs[i]).name, inputs[i].shape());
  passes::bind_inputs(g, shapes);
  annotate_types(g);
  trace->values.resize(g.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) trace->values[g.inputs[i]] = inputs[i];
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined()) trace->values[v] = g.values[v].constant;
  reference::evaluate(g, inputs, [&](const ir::Node& node, int output_index, const Tensor& value) {
    ir::ValueId v = node.outputs[output_index];
    if (v != ir::kNoValue) trace->values[v] = value;
  });
  // Where the annotation could not tell the shape, the evaluated value does.
  for (size_t v = 0; v < g.values.size(); ++v)
    if (trace->values[v].defined() && !g.values[v].shape_known())
      g.values[v].shape = trace->values[v].shape();
  if (calibrate) {
    trace->noise.assign(g.values.size(), -1);
    calibrate_noise(model_path, g, trace->values, inputs, shapes, trace->noise);
  }
  return trace;
}

ExternalBisectResult bisect_external(const std::string& model_path, const Runner& ref,
                                     const Runner& test, const std::vector<Tensor>& inputs,
                                     const ExternalBisectOptions& options) {
  int warm_ups = 0;
  if (options.warm_up) {
    ir::Graph g = onnx::import_model(model_path);
    NamedTensors named;
    for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) named[g.value(g.inputs[i]).name] = inputs[i];
    std::vector<std::string> outputs;
    for (ir::ValueId v : g.outputs) outputs.push_back(g.value(v).name);
    for (const Runner* side : {&ref, &test})
      if (side->kind() == Runner::Kind::Persistent) {
        for (const std::string& earlier : options.warm_up_models) {
          if (options.progress) options.progress("warm-up: " + earlier + " once on '" + side->spec() + "'");
          ir::Graph eg = onnx::import_model(earlier);
          std::vector<std::string> earlier_outputs;
          for (ir::ValueId v : eg.outputs) earlier_outputs.push_back(eg.value(v).name);
          side->run(earlier, named, earlier_outputs, "");
          ++warm_ups;
        }
        if (options.progress) options.progress("warm-up: the whole model once on '" + side->spec() + "' (its first compile)");
        side->run(model_path, named, outputs, "");
        ++warm_ups;
      }
  }
  Search search(model_path, ref, test, inputs, options);
  ExternalBisectResult r = search.run();
  r.warm_up_runs = warm_ups;
  r.in_process = test.kind() == Runner::Kind::Persistent;
  return r;
}

std::string format_external_bisect(const ExternalBisectResult& r) {
  std::ostringstream out;
  out << "external bisection: ref " << r.ref_spec << ", test " << r.test_spec << ", "
      << r.node_count << " nodes\n";
  for (size_t i = 0; i < r.probes.size(); ++i) {
    const ExternalProbe& p = r.probes[i];
    out << "  [" << i + 1 << "] " << p.phase << " cut after node " << p.cut + 1 << ": " << p.tensors
        << " tensor(s) " << (p.bad ? "DIVERGE" : "agree") << "; worst " << p.worst_tensor
        << " rel_l2 " << num(p.worst.rel_l2) << " cosine " << num(p.worst.cosine) << " (tol "
        << num(p.tolerance) << ")\n";
  }
  if (r.in_process)
    out << "in-process: the test side is one runner process (protocol v2)"
        << (r.warm_up_runs ? ", which first ran the whole model once" : "") << "\n";
  if (!r.diverged) {
    out << "agreement: every graph output within tolerance (" << r.test_invocations
        << " runner invocation(s))\n";
    return out.str();
  }
  out << "first divergent node: #" << r.node_index + 1 << " " << r.node_name << " (" << r.op
      << ")\n"
      << "  value " << r.tensor << ": cosine " << num(r.metrics.cosine) << ", max_abs_delta "
      << num(r.metrics.max_abs_delta) << ", rms_ratio " << num(r.metrics.rms_ratio) << ", rel_l2 "
      << num(r.metrics.rel_l2) << " (tol " << num(r.tolerance) << ")\n";
  if (r.local_checked)
    out << "  alone, fed the reference's inputs: rel_l2 " << num(r.local_metrics.rel_l2) << " (tol "
        << num(r.local_tolerance) << ") -> " << r.verdict << "\n";
  out << "runner invocations: test " << r.test_invocations << ", ref " << r.ref_invocations << "; "
      << num(r.seconds) << " s\n";
  return out.str();
}

std::string external_bisect_json(const ExternalBisectResult& r) {
  nlohmann::json j = {{"ref", r.ref_spec},
                      {"test", r.test_spec},
                      {"node_count", r.node_count},
                      {"diverged", r.diverged},
                      {"test_invocations", r.test_invocations},
                      {"ref_invocations", r.ref_invocations},
                      {"seconds", r.seconds},
                      {"in_process", r.in_process},
                      {"warm_up_runs", r.warm_up_runs}};
  if (r.diverged) {
    j["node"] = {{"index", r.node_index + 1},
                 {"name", r.node_name},
                 {"op", r.op},
                 {"tensor", r.tensor},
                 {"tolerance", r.tolerance},
                 {"metrics", metrics_json(r.metrics)}};
    if (r.local_checked)
      j["local"] = {{"metrics", metrics_json(r.local_metrics)},
                    {"tolerance", r.local_tolerance},
                    {"verdict", r.verdict}};
  }
  j["probes"] = nlohmann::json::array();
  for (const auto& p : r.probes)
    j["probes"].push_back({{"phase", p.phase},
                           {"cut", p.cut + 1},
                           {"tensors", p.tensors},
                           {"bad", p.bad},
                           {"worst_tensor", p.worst_tensor},
                           {"tolerance", p.tolerance},
                           {"seconds", p.seconds},
                           {"metrics", metrics_json(p.worst)}});
  return j.dump(2);
}

}  // namespace lockstep::diff
