// `lockstep check MODEL --ref R --test T [--anchors NODE,NODE]`: the bug report's table for any
// pair of sides (lockstep backends or runner commands): at each anchor node and at the outputs,
// T against R in fresh processes and inside one process per side (runners speaking protocol v2,
// docs/runner-protocol.md): cosine, max_abs_delta, RMS ratio and the SHA-256 of T's value.
// PASS needs every point to agree in both modes (anchors by cosine and RMS ratio, outputs by
// the agreement bar) and T's bits to be the same in both.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "capture.h"
#include "commands.h"
#include "core/hash.h"
#include "diff/extract.h"
#include "diff/metrics.h"
#include "diff/metrics_json.h"
#include "diff/runner.h"
#include "diff/runner_server.h"
#include "diff/synth.h"
#include "inputs.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/pipeline.h"
#include "table.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  Scratch() {
    path = (fs::temp_directory_path() / ("lockstep_check_pair_" + std::to_string(::getpid()))).string();
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

// One row of the table: where, and per mode the metrics and T's hash ("" when not run).
struct Point {
  std::string where, tensor, model_path;
  diff::Metrics fresh, in_process;
  std::string sha_fresh, sha_in_process, error_fresh, error_in_process;
};

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

}  // namespace

int cmd_check_pair(const CheckArgs& args) {
  const std::string ref_spec = args.ref.empty() ? "reference" : args.ref;
  const std::string test_spec = args.test.empty() ? "cpu" : args.test;
  for (const std::string& s : {ref_spec, test_spec}) diff::require_known_side(s);
  if (args.format != "text" && args.format != "markdown" && args.format != "json")
    throw Error(ErrorCode::InvalidArgument, "--format must be text, markdown or json (given '" + args.format + "')");
  Scratch scratch;
  const bool embedded = args.model.empty();
  std::string model_path = args.model;
  if (embedded) {
    model_path = scratch.path + "/seed_flow.onnx";
    zoo::write_seed_flow_onnx(model_path);
  }
  Model model = load_model_or_default(args.model);
  ModelInputs inputs;
  if (embedded && !has_input_args(args.inputs)) inputs.tensors = zoo::seed_flow_inputs();
  else inputs = gather_inputs(model.graph(), args.inputs);
  ir::Graph graph = onnx::import_model(model_path);
  diff::NamedTensors named;
  for (size_t i = 0; i < graph.inputs.size(); ++i) named[graph.value(graph.inputs[i]).name] = inputs.tensors.at(i);
  try {  // intermediate values need types for the cut subgraphs
    passes::bind_inputs(graph, inputs.bind);
    diff::annotate_types(graph);
  } catch (const Error&) {
  }

  // The points: each anchor's value (its node's first output), cut out as a model of its own, then
  // the whole model's outputs.
  std::vector<std::string> anchor_names;
  if (args.anchors.empty())
    for (const auto& a : choose_anchors(model.graph(), embedded)) anchor_names.push_back(a.name);
  else
    anchor_names = split_names(args.anchors);
  std::vector<Point> points;
  for (size_t k = 0; k < anchor_names.size(); ++k) {
    int node = graph.find_node(anchor_names[k]);
    if (node < 0)
      throw Error(ErrorCode::InvalidArgument, "--anchors: no node '" + anchor_names[k] + "' in " + model_path);
    const std::string tensor = graph.value(graph.nodes[static_cast<size_t>(node)].outputs[0]).name;
    Point p{"anchor " + anchor_names[k], tensor, scratch.path + "/anchor_" + std::to_string(k) + ".onnx"};
    onnx::export_model(diff::extract_subgraph(graph, {tensor}), p.model_path);
    points.push_back(p);
  }
  for (ir::ValueId o : graph.outputs) points.push_back({"output " + graph.value(o).name, graph.value(o).name, model_path});

  // Fresh: a backend compiles anew, a command is a fresh process, for every point. In-process:
  // one persistent process per runner side, serving every point in turn.
  auto side = [&](const std::string& spec, bool persistent) {
    diff::Runner r = persistent && !find_backend(spec) ? diff::Runner::persistent(spec) : diff::Runner::parse(spec);
    r.threads = args.common.threads;
    return r;
  };
  diff::Runner ref_fresh = side(ref_spec, false), test_fresh = side(test_spec, false);
  diff::Runner ref_in = side(ref_spec, true), test_in = side(test_spec, true);
  std::vector<std::string> notes;
  bool in_process_ok = true;
  auto inputs_of = [&](const std::string& path) {
    ir::Graph g = onnx::import_model(path);
    diff::NamedTensors subset;
    for (ir::ValueId v : g.inputs) subset[g.value(v).name] = named.at(g.value(v).name);
    return subset;
  };
  // T against R on one point, in one mode: the metrics and T's hash.
  auto measure = [](const diff::Runner& ref, const diff::Runner& test, const Point& p, const diff::NamedTensors& feeds,
                    diff::Metrics* m, std::string* sha) {
    Tensor r = ref.run(p.model_path, feeds, {p.tensor}, "").at(p.tensor);
    Tensor t = test.run(p.model_path, feeds, {p.tensor}, "").at(p.tensor);
    *m = diff::compare(t, r);
    *sha = sha256_hex(t);
  };
  // First of all, each in-process side runs B — the model with other weights (same names, op types
  // and shapes): a runner that caches its compiled models by structure then answers the model (and
  // an anchor cut to the whole model) with B's numbers, and the in-process column disagrees.
  {
    const std::string other_weights = scratch.path + "/B_other_weights.onnx";
    ir::Graph b = onnx::import_model(model_path);
    diff::perturb_weights(b, 1);
    onnx::export_model(b, other_weights);
    std::vector<std::string> outputs;
    for (ir::ValueId o : graph.outputs) outputs.push_back(graph.value(o).name);
    std::cerr << "lockstep: check in-process B (the model with other weights)\n";
    try {
      for (const diff::Runner* in : {&ref_in, &test_in}) in->run(other_weights, named, outputs, "");
    } catch (const Error& e) {
      if (diff::is_not_v2_error(e)) {
        in_process_ok = false;
        notes.push_back("in-process columns not run: " + std::string(e.what()).substr(0, 300));
      } else {
        notes.push_back("in-process B (the model with other weights) failed: " + std::string(e.what()).substr(0, 300));
      }
    }
  }
  for (Point& p : points) {
    std::cerr << "lockstep: check " << p.where << '\n';
    const diff::NamedTensors feeds = inputs_of(p.model_path);
    try {
      measure(ref_fresh, test_fresh, p, feeds, &p.fresh, &p.sha_fresh);
    } catch (const Error& e) {
      p.error_fresh = e.what();
    }
    if (!in_process_ok) continue;
    try {
      measure(ref_in, test_in, p, feeds, &p.in_process, &p.sha_in_process);
    } catch (const Error& e) {
      if (diff::is_not_v2_error(e)) {
        in_process_ok = false;
        notes.push_back("in-process columns not run: " + std::string(e.what()).substr(0, 300));
      } else {
        p.error_in_process = e.what();
      }
    }
  }

  // As `check` judges its anchors: an intermediate value of small magnitude can have a relative
  // L2 above the outputs' 1e-5 bar from float32 rounding alone, so anchors are held to the cosine
  // bar (and an RMS ratio within 1e-4, which a scaled value fails); outputs to diff::agrees.
  auto ok = [](const Point& p, const diff::Metrics& m) {
    if (p.where.rfind("output ", 0) == 0) return diff::agrees(m);
    return m.shape_match && m.nan_count_test == 0 && m.nan_count_ref == 0 && m.cosine >= diff::kAgreeCosine &&
           std::abs(m.rms_ratio - 1) <= 1e-4;
  };
  bool pass = true;
  std::vector<std::string> failures;
  for (const Point& p : points) {
    if (!p.error_fresh.empty() || !ok(p, p.fresh)) failures.push_back(p.where + ": fresh processes disagree");
    if (!in_process_ok) continue;
    if (!p.error_in_process.empty() || !ok(p, p.in_process)) failures.push_back(p.where + ": in-process disagrees");
    if (!p.sha_fresh.empty() && !p.sha_in_process.empty() && p.sha_fresh != p.sha_in_process)
      failures.push_back(p.where + ": " + test_spec + " gives other bits in one process than in fresh ones");
  }
  pass = failures.empty();

  if (args.format == "json" || args.common.json) {
    nlohmann::json j = {{"model", embedded ? "(embedded default)" : args.model}, {"ref", ref_spec}, {"test", test_spec},
                        {"points", nlohmann::json::array()}, {"notes", notes}, {"failures", failures}, {"pass", pass}};
    for (const Point& p : points) {
      nlohmann::json jp = {{"where", p.where}, {"tensor", p.tensor}, {"fresh", diff::metrics_json(p.fresh)},
                           {"sha256_fresh", p.sha_fresh}};
      if (in_process_ok) {
        jp["in_process"] = diff::metrics_json(p.in_process);
        jp["sha256_in_process"] = p.sha_in_process;
      }
      if (!p.error_fresh.empty()) jp["error_fresh"] = p.error_fresh;
      if (!p.error_in_process.empty()) jp["error_in_process"] = p.error_in_process;
      j["points"].push_back(jp);
    }
    std::cout << j.dump(2) << '\n';
    return pass ? kExitOk : kExitFail;
  }
  const std::vector<std::string> header{"where", "fresh cosine", "fresh max_abs_delta", "fresh rms_ratio",
                                        "in-process cosine", "in-process max_abs_delta", "in-process rms_ratio",
                                        "sha256 fresh", "sha256 in-process"};
  auto cells = [&](const Point& p) {
    auto m = [](const diff::Metrics& x, const std::string& err, int which) -> std::string {
      if (!err.empty()) return "FAILED";
      return which == 0 ? fmt_fixed(x.cosine, 10) : which == 1 ? fmt_sci(x.max_abs_delta) : fmt_fixed(x.rms_ratio, 6);
    };
    std::vector<std::string> row{p.where};
    for (int w = 0; w < 3; ++w) row.push_back(m(p.fresh, p.error_fresh, w));
    for (int w = 0; w < 3; ++w) row.push_back(in_process_ok ? m(p.in_process, p.error_in_process, w) : "-");
    row.push_back(p.sha_fresh.substr(0, 16));
    row.push_back(in_process_ok ? p.sha_in_process.substr(0, 16) : "-");
    return row;
  };
  std::cout << "model: " << (embedded ? "embedded default (174 nodes)" : args.model) << "\nref:   " << ref_spec
            << "\ntest:  " << test_spec << '\n';
  if (args.format == "markdown") {
    std::string line = "|";
    for (const auto& h : header) line += " " + h + " |";
    std::cout << line << "\n|";
    for (size_t i = 0; i < header.size(); ++i) std::cout << "---|";
    std::cout << '\n';
    for (const Point& p : points) {
      std::string row = "|";
      for (const auto& c : cells(p)) row += " " + c + " |";
      std::cout << row << '\n';
    }
  } else {
    Table table(header);
    for (const Point& p : points) table.add(cells(p));
    table.print(std::cout);
  }
  for (const auto& n : notes) std::cout << "NOTE: " << n << '\n';
  for (const Point& p : points) {
    if (!p.error_fresh.empty()) std::cout << p.where << " (fresh): " << p.error_fresh << '\n';
    if (!p.error_in_process.empty()) std::cout << p.where << " (in-process): " << p.error_in_process << '\n';
  }
  if (pass) std::cout << "PASS: " << test_spec << " agrees with " << ref_spec << " at every point, fresh and in one process\n";
  else {
    std::cout << "FAIL: " << failures.size() << " problem(s)\n";
    for (const auto& f : failures) std::cout << "  " << f << '\n';
  }
  return pass ? kExitOk : kExitFail;
}

}  // namespace lockstep::cli
