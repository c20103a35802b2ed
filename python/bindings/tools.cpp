// The diagnosis tools (compare's metrics, bisect, reduce, extract, determinism, bisect_passes,
// check's captures) for python/lockstep/_tools.py. Reports cross as JSON text plus the C++
// library's own text/markdown/HTML renderings, so Python and the CLI print the same tables.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "bindings.h"
#include "capture.h"
#include "convert.h"
#include "core/hash.h"
#include "diff/bisect.h"
#include "diff/bisect_passes.h"
#include "diff/determinism.h"
#include "diff/external_bisect.h"
#include "diff/extract.h"
#include "diff/metrics.h"
#include "diff/metrics_json.h"
#include "diff/reduce.h"
#include "diff/report.h"
#include "diff/synth.h"
#include "inputs.h"
#include "ir/print.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/pipeline.h"
#include "dynamic/executable.h"
#include "core/npy.h"

namespace lockstep::python {
namespace {

std::vector<Tensor> tensors_of(nb::list arrays, const ir::Graph& graph) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < arrays.size(); ++i)
    out.push_back(to_tensor(arrays[i], "input '" + (i < graph.inputs.size() ? graph.value(graph.inputs[i]).name
                                                                             : std::to_string(i)) + "'"));
  return out;
}

// Releases the wrapped Python object under the GIL, whichever thread drops the last reference.
std::shared_ptr<nb::object> keep_python(nb::handle h) {
  return std::shared_ptr<nb::object>(new nb::object(nb::borrow(h)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

// A runner from Python: a lockstep backend name, a command line, or a callable
// f(model_path, feeds, wanted) -> {name: array} run in this process under the GIL.
diff::Runner runner_of(nb::handle spec, int threads, bool persistent = false) {
  diff::Runner runner;
  if (nb::isinstance<nb::str>(spec)) {
    std::string s = nb::cast<std::string>(spec);
    diff::require_known_side(s);
    // persistent: a command served by one process (protocol v2), as `bisect --in-process`.
    runner = persistent && !find_backend(s) ? diff::Runner::persistent(s) : diff::Runner::parse(s);
  } else if (PyCallable_Check(spec.ptr())) {
    auto fn = keep_python(spec);
    std::string name = nb::hasattr(spec, "__qualname__") ? nb::cast<std::string>(nb::str(spec.attr("__qualname__")))
                                                          : nb::cast<std::string>(nb::repr(spec));
    runner = diff::Runner::function(
        "python:" + name, [fn](const std::string& model_path, const diff::NamedTensors& inputs,
                               const std::vector<std::string>& wanted) {
          nb::gil_scoped_acquire gil;
          nb::list names;
          for (const auto& w : wanted) names.append(nb::str(w.c_str()));
          nb::dict feeds = to_dict(inputs);
          // The feeds are views of lockstep's tensors: read-only, so a runner cannot alter them.
          for (auto [name, array] : feeds) array.attr("setflags")(nb::arg("write") = false);
          nb::object result = (*fn)(model_path, feeds, names);
          return to_named_tensors(result, "the runner's result");
        });
  } else {
    throw Error(ErrorCode::InvalidArgument, "a runner is a backend name, a command line or a callable "
                                            "f(model_path, feeds, wanted) -> dict");
  }
  runner.threads = threads;
  return runner;
}

// Progress lines reach Python (a callback or nothing); Ctrl-C between steps raises
// KeyboardInterrupt out of the C++ work.
std::function<void(const std::string&)> progress_of(nb::handle callback) {
  auto cb = callback.is_none() ? nullptr : keep_python(callback);
  return [cb](const std::string& line) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    if (cb) (*cb)(line);
  };
}

diff::LocalMode local_of(const std::string& s) {
  if (s == "first") return diff::LocalMode::First;
  if (s == "divergent") return diff::LocalMode::Divergent;
  if (s == "all") return diff::LocalMode::All;
  throw Error(ErrorCode::InvalidArgument, "local must be 'first', 'divergent' or 'all' (given '" + s + "')");
}

nb::dict capture_dict(cli::Capture c) {
  nb::dict d;
  nb::list anchors, outputs;
  for (Tensor& t : c.anchors) anchors.append(t.defined() ? to_numpy(std::move(t)) : nb::none());
  for (Tensor& t : c.outputs) outputs.append(to_numpy(std::move(t)));
  d["anchors"] = anchors;
  d["status"] = c.status;
  d["outputs"] = outputs;
  return d;
}

std::vector<cli::Anchor> anchors_of(const std::vector<std::string>& names) {
  std::vector<cli::Anchor> out;
  for (const auto& n : names) out.push_back({0, n});
  return out;
}

}  // namespace

void bind_tools(nb::module_& m) {
  m.def("metrics", [](nb::handle test, nb::handle ref) {
    Tensor t = to_tensor(test, "test"), r = to_tensor(ref, "ref");
    diff::Metrics mt = diff::compare(t, r);
    return std::make_pair(diff::metrics_json(mt).dump(), diff::agrees(mt));
  });
  m.def("agreement_bar", [] { return std::make_pair(diff::kAgreeRelL2, diff::kAgreeCosine); });
  m.def("sha256", [](nb::handle array) { return sha256_hex(to_tensor(array, "array")); });

  // One call of a runner (backend name, command line or callable) on a model file, by name.
  m.def("run_runner", [](nb::handle spec, const std::string& model_path, nb::handle feeds,
                         const std::vector<std::string>& wanted, int threads) {
    diff::Runner runner = runner_of(spec, threads);
    diff::NamedTensors inputs = to_named_tensors(feeds, "feeds");
    diff::NamedTensors out;
    {
      nb::gil_scoped_release release;
      out = runner.run(model_path, inputs, wanted, "");
      inputs.clear();
    }
    return to_dict(out);
  });

  // Bisection on lockstep's own backends: taps at every kernel boundary of one compiled graph.
  // Returns (json, text, markdown, html).
  m.def(
      "bisect_backends",
      [](const NativeModel& native, nb::list arrays, const std::string& test, const std::string& ref,
         nb::handle options, const std::string& local, double safety, double floor, uint64_t seed,
         const std::string& label) {
        cli::ModelInputs inputs;
        inputs.tensors = tensors_of(arrays, native.model.graph());
        diff::BisectConfig config;
        config.ref = ref;
        config.options = options_from_dict(options);
        config.tolerance.safety = safety;
        config.tolerance.floor = floor;
        config.local = local_of(local);
        nb::gil_scoped_release release;
        Model model = cli::specialise_for_tools(native.model, inputs, seed, "bisect");
        if (&model.graph() != &native.model.graph()) config.options.input_shapes.clear();
        diff::require_backend(test);
        diff::Bisector bisector(model, inputs.tensors, config);
        diff::BisectReport report = bisector.run(test);
        report.model = label;
        return std::make_tuple(diff::to_json(report).dump(), diff::format_text(report), diff::format_markdown(report),
                               diff::format_html(report));
      },
      nb::arg("model"), nb::arg("inputs"), nb::arg("test"), nb::arg("ref"), nb::arg("options").none(),
      nb::arg("local"), nb::arg("safety"), nb::arg("floor"), nb::arg("seed"), nb::arg("label"));

  // Bisection through runners (any runtime): subgraphs cut from the model file, run by `test`.
  // Returns (json, text).
  m.def(
      "bisect_runners",
      [](const std::string& model_path, nb::list arrays, nb::handle ref_h, nb::handle test_h, int threads,
         nb::handle input_shapes, bool calibrate, double safety, double floor, double cap, bool local_check,
         const std::string& work_dir, nb::handle progress, bool in_process) {
        NativeModel native{Model::load(model_path), model_path};
        std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
        diff::Runner ref = runner_of(ref_h, threads, in_process), test = runner_of(test_h, threads, in_process);
        diff::ExternalBisectOptions o;
        o.warm_up = in_process;
        if (!input_shapes.is_none()) o.input_shapes = nb::cast<std::map<std::string, Shape>>(input_shapes);
        o.calibrate = calibrate;
        o.safety = safety;
        o.floor = floor;
        o.cap = cap;
        o.local_check = local_check;
        o.work_dir = work_dir;
        o.keep_work = !work_dir.empty();
        o.progress = progress_of(progress);
        nb::gil_scoped_release release;
        diff::ExternalBisectResult r = diff::bisect_external(model_path, ref, test, inputs, o);
        return std::make_pair(diff::external_bisect_json(r), diff::format_external_bisect(r));
      },
      nb::arg("model_path"), nb::arg("inputs"), nb::arg("ref"), nb::arg("test"), nb::arg("threads"),
      nb::arg("input_shapes").none(), nb::arg("calibrate"), nb::arg("safety"), nb::arg("floor"), nb::arg("cap"),
      nb::arg("local_check"), nb::arg("work_dir"), nb::arg("progress").none(), nb::arg("in_process") = false);

  // A minimal reproducer of the first divergence between two runners. Returns (json, text).
  m.def(
      "reduce",
      [](const std::string& model_path, nb::list arrays, nb::handle ref_h, nb::handle test_h, const std::string& out_dir,
         int threads, nb::handle input_shapes, std::optional<std::string> synthetic, nb::handle progress) {
        NativeModel native{Model::load(model_path), model_path};
        std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
        diff::Runner ref = runner_of(ref_h, threads), test = runner_of(test_h, threads);
        diff::ReduceOptions o;
        if (!input_shapes.is_none()) o.bisect.input_shapes = nb::cast<std::map<std::string, Shape>>(input_shapes);
        o.bisect.progress = progress_of(progress);
        if (synthetic) o.synthetic = diff::parse_synthetic_weights(*synthetic);
        nb::gil_scoped_release release;
        diff::ReduceResult r = diff::reduce(model_path, ref, test, inputs, out_dir, o);
        nlohmann::json j = nlohmann::json::parse(diff::external_bisect_json(r.bisect));
        nlohmann::json out = {{"bisect", j},
                              {"diverged", r.diverged},
                              {"out_dir", r.out_dir},
                              {"files", r.files},
                              {"kept_nodes", r.kept_nodes},
                              {"still_diverges", r.still_diverges},
                              {"recheck", diff::metrics_json(r.recheck)},
                              {"synthetic", r.synthetic},
                              {"synthetic_diverges", r.synthetic_diverges},
                              {"synthetic_recheck", diff::metrics_json(r.synthetic_recheck)},
                              {"commands", r.commands}};
        return std::make_pair(out.dump(), diff::format_reduce(r));
      },
      nb::arg("model_path"), nb::arg("inputs"), nb::arg("ref"), nb::arg("test"), nb::arg("out_dir"),
      nb::arg("threads"), nb::arg("input_shapes").none(), nb::arg("synthetic").none(), nb::arg("progress").none());

  // The subgraph computing `outputs` from `inputs` (tensor names), written as ONNX to `out_path`.
  // Returns the kept node count.
  m.def("extract", [](const std::string& model_path, const std::vector<std::string>& outputs,
                      const std::vector<std::string>& inputs, nb::handle input_shapes, const std::string& out_path) {
    std::map<std::string, Shape> shapes;
    if (!input_shapes.is_none()) shapes = nb::cast<std::map<std::string, Shape>>(input_shapes);
    nb::gil_scoped_release release;
    ir::Graph graph = onnx::import_model(model_path);
    try {  // intermediate tensors made inputs need their types: known once input shapes are bound
      passes::bind_inputs(graph, shapes);
      diff::annotate_types(graph);
    } catch (const Error&) {
      // symbolic input dims: declared types only (as the CLI's extract)
    }
    ir::Graph sub = diff::extract_subgraph(graph, outputs, inputs);
    onnx::export_model(sub, out_path);
    onnx::import_model(out_path);  // the written file must import (a malformed cut fails here)
    std::vector<std::string> in_names, out_names;
    for (ir::ValueId v : sub.inputs) in_names.push_back(sub.value(v).name);
    for (ir::ValueId v : sub.outputs) out_names.push_back(sub.value(v).name);
    return std::make_tuple(sub.nodes.size(), graph.nodes.size(), in_names, out_names);
  }, nb::arg("model_path"), nb::arg("outputs"), nb::arg("inputs"), nb::arg("input_shapes").none(), nb::arg("out_path"));

  // The in-process sequence of `lockstep determinism` (A1, A1 again, [A1 at length B,] B, C, A2,
  // A from another path, A1 after A2), B and C written into `scratch` for fresh processes. Returns
  // JSON: runs, the other models (label, path, expect) and, when the sequence ran A at another
  // length, those inputs as an .npz for a fresh process.
  m.def("determinism_in_process", [](const NativeModel& native, nb::list arrays, const std::string& backend,
                                     nb::handle options, const std::string& scratch, const std::string& model_path) {
    std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
    Options o = options_from_dict(options);
    nb::gil_scoped_release release;
    if (dynamic::needs_run_time_shapes(native.model.graph(), o)) o.input_shapes.clear();
    std::vector<diff::OtherGraph> others = diff::sequence_others(native.model, inputs, scratch, model_path);
    nlohmann::json runs = nlohmann::json::array(), other_models = nlohmann::json::array();
    bool churned = false;
    for (const auto& r : diff::in_process_sequence(native.model, inputs, backend, o, others)) {
      nlohmann::json jr = {{"mode", r.mode}, {"compared", r.of_a}, {"sha256", r.sha256}, {"expect", r.expect}};
      if (!r.error.empty()) jr["error"] = r.error;
      churned |= r.expect == "A at length B";
      runs.push_back(jr);
    }
    for (const auto& other : others)
      if (other.expect != "A") other_models.push_back({{"label", other.label}, {"path", other.path}, {"expect", other.expect}});
    std::string length_npz;
    if (churned) {
      const ir::Graph& g = native.model.graph();
      length_npz = scratch + "/inputs_at_length_b.npz";
      write_npz(length_npz, diff::by_input_name(g, diff::other_length_inputs(g, inputs)));
    }
    return nlohmann::json{{"runs", runs}, {"others", other_models}, {"length_npz", length_npz}}.dump();
  });

  // determinism's verdict over runs and the fresh bits of the other models, as the CLI gives it
  // (diff::find_differences): JSON with differences, first_change and notes.
  m.def("determinism_differences", [](const std::string& runs_json, const std::string& fresh_json,
                                      const std::vector<std::string>& names) {
    diff::DeterminismReport report;
    report.output_names = names;
    for (const auto& jr : nlohmann::json::parse(runs_json)) {
      diff::DeterminismRun r;
      r.mode = jr.at("mode").get<std::string>();
      r.sha256 = jr.value("sha256", std::vector<std::string>{});
      r.error = jr.value("error", std::string());
      r.of_a = jr.value("compared", true);
      r.expect = jr.value("expect", std::string());
      report.runs.push_back(std::move(r));
    }
    report.fresh = nlohmann::json::parse(fresh_json).get<std::map<std::string, std::vector<std::string>>>();
    diff::find_differences(report);
    return nlohmann::json{{"differences", report.differences}, {"first_change", report.first_change},
                          {"notes", report.notes}}.dump();
  });

  // `lockstep bisect-passes`: the first pass application that moves the output. Returns JSON.
  m.def("bisect_passes", [](const NativeModel& native, nb::list arrays, const std::string& backend,
                            nb::handle options, double safety) {
    std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
    diff::BisectPassesConfig config;
    config.backend = backend;
    config.options = options_from_dict(options);
    config.safety = safety;
    nb::gil_scoped_release release;
    diff::BisectPassesReport r = diff::bisect_passes(native.model, inputs, config);
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& p : r.probes) probes.push_back({{"limit", p.limit}, {"error", p.error}, {"within", p.within}});
    nlohmann::json j = {{"backend", r.backend},
                        {"total_applications", r.total_applications},
                        {"log", r.log},
                        {"baseline_error", r.baseline_error},
                        {"tolerance", r.tolerance},
                        {"probes", probes},
                        {"culprit", r.culprit},
                        {"culprit_line", r.culprit_line},
                        {"ir_before", r.ir_before},
                        {"ir_after", r.ir_after},
                        {"baseline_diverges", r.baseline_diverges},
                        {"found", r.found()}};
    return j.dump();
  });

  // check's captures: anchors chosen as the CLI chooses them; the float64 reference capture and
  // one backend's capture (taps at the anchors, which stay kernel boundaries).
  m.def("choose_anchors", [](const NativeModel& native, bool embedded) {
    std::vector<std::pair<int, std::string>> out;
    for (const auto& a : cli::choose_anchors(native.model.graph(), embedded)) out.emplace_back(a.index, a.name);
    return out;
  });
  m.def("capture_reference", [](const NativeModel& native, nb::list arrays, const std::vector<std::string>& anchors,
                                nb::handle options, uint64_t seed) {
    std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
    Options o = options_from_dict(options);
    cli::Capture c;
    {
      nb::gil_scoped_release release;
      c = cli::reference_capture(native.model, o, inputs, anchors_of(anchors), seed);
    }
    return capture_dict(std::move(c));
  });
  m.def("capture_backend", [](const NativeModel& native, nb::list arrays, const std::string& backend,
                              const std::vector<std::string>& anchors, nb::handle options, uint64_t seed) {
    std::vector<Tensor> inputs = tensors_of(arrays, native.model.graph());
    Options o = options_from_dict(options);
    for (const auto& a : anchors) o.observe.push_back(a);
    cli::Capture c;
    {
      nb::gil_scoped_release release;
      auto exe = compile(native.model, backend, o);
      c = cli::run_with_taps(*exe, inputs, anchors_of(anchors), seed);
    }
    return capture_dict(std::move(c));
  });
}

}  // namespace lockstep::python
