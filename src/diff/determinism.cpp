#include "diff/determinism.h"

#include <cstring>
#include <filesystem>
#include <memory>

#include "core/hash.h"
#include "diff/runner.h"
#include "diff/runner_server.h"
#include "diff/synth.h"
#include "dynamic/executable.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "voices/piper.h"

namespace lockstep::diff {

std::vector<std::string> output_hashes(const std::vector<Tensor>& outputs) {
  std::vector<std::string> out;
  for (const Tensor& t : outputs) out.push_back(t.defined() ? sha256_hex(t) : "");
  return out;
}

namespace {

// The first `keep` entries of `t` along `dim`.
Tensor slice_leading(const Tensor& t, size_t dim, int64_t keep) {
  Shape shape = t.shape();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t old = shape[dim];
  shape[dim] = keep;
  Tensor out(t.dtype(), shape);
  const size_t es = dtype_size(t.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(t.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * keep * inner * es, src + o * old * inner * es, static_cast<size_t>(keep * inner) * es);
  return out;
}

}  // namespace

std::vector<Tensor> other_length_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  if (voices::is_piper_voice(graph)) return voices::shorter_inputs(graph, inputs);
  // Otherwise: every symbolic dim of every input halved (its leading part kept).
  std::vector<Tensor> out;
  bool changed = false;
  for (size_t i = 0; i < inputs.size() && i < graph.inputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.inputs[i]);
    Tensor t = inputs[i];
    for (size_t d = 0; d < v.shape.size() && d < t.shape().size(); ++d) {
      if (v.shape[d] >= 0 || t.shape()[d] < 2) continue;
      t = slice_leading(t, d, t.shape()[d] / 2);
      changed = true;
    }
    out.push_back(t);
  }
  return changed ? out : std::vector<Tensor>{};
}

std::map<std::string, Tensor> by_input_name(const ir::Graph& graph, const std::vector<Tensor>& tensors) {
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < tensors.size() && i < graph.inputs.size(); ++i) named[graph.value(graph.inputs[i]).name] = tensors[i];
  return named;
}

std::vector<OtherGraph> sequence_others(const Model& a, const std::vector<Tensor>& inputs, const std::string& dir,
                                        const std::string& a_path) {
  std::vector<OtherGraph> others;
  for (uint64_t seed : {1, 2}) {
    const std::string label = seed == 1 ? "B" : "C";
    ir::Graph g = a.graph();
    perturb_weights(g, seed);
    const std::string path = dir + "/" + label + ".onnx";
    onnx::export_model(g, path);
    others.push_back({label, Model::from_graph(std::move(g)), inputs, label, path});
  }
  if (!a_path.empty()) {  // the same bytes under another name: a cache keyed on the path
    const std::string copy = dir + "/A_from_another_path.onnx";
    std::filesystem::copy_file(a_path, copy, std::filesystem::copy_options::overwrite_existing);
    others.push_back({"A from another path", Model::load(copy), inputs, "A", copy});
  }
  return others;
}

std::vector<DeterminismRun> in_process_sequence(const Model& a, const std::vector<Tensor>& inputs,
                                                const std::string& backend, const Options& options,
                                                const std::vector<OtherGraph>& others) {
  std::vector<DeterminismRun> runs;
  std::vector<std::unique_ptr<Executable>> alive;  // every executable stays alive to the end
  auto attempt = [&](const std::string& mode, const std::string& expect, auto&& body) {
    DeterminismRun r{mode, {}, "", true, expect};
    try {
      r.sha256 = output_hashes(body());
    } catch (const Error& e) {
      r.error = e.what();
    }
    runs.push_back(std::move(r));
  };
  Executable* a1 = nullptr;
  attempt("A1", "A", [&] {
    alive.push_back(compile(a, backend, options));
    a1 = alive.back().get();
    return a1->run(inputs);
  });
  attempt("A1 again", "A", [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  // Shape churn (run-time shapes): the same executable at another length, then A's length again.
  if (a1 && dynamic::stats(*a1)) {
    std::vector<Tensor> other_length = other_length_inputs(a.graph(), inputs);
    if (!other_length.empty()) {
      attempt("A1 at length B", "A at length B", [&] { return a1->run(other_length); });
      attempt("A1 after length B", "A", [&] { return a1->run(inputs); });
    }
  }
  for (const auto& other : others)
    attempt(other.label, other.expect, [&] {
      Options o = options;
      if (other.expect != "A") o.input_shapes.clear();
      o.observe.clear();
      alive.push_back(compile(other.model, backend, o));
      return alive.back()->run(other.inputs);
    });
  attempt("A2", "A", [&] {
    alive.push_back(compile(a, backend, options));
    return alive.back()->run(inputs);
  });
  attempt("A1 after A2", "A", [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  return runs;
}

std::vector<DeterminismRun> runner_in_process_sequence(const std::string& command, const std::string& model_path,
                                                       const std::map<std::string, Tensor>& inputs,
                                                       const std::vector<std::string>& outputs,
                                                       const std::string& scratch_dir, std::string* note,
                                                       std::map<std::string, std::vector<std::string>>* fresh) {
  // B and C: A's graph with perturbed weights (same names and shapes: a runtime that caches by
  // name or structure sees "the same" graph with other numbers); A again from another path.
  const Model a = Model::load(model_path);
  std::vector<Tensor> ordered_inputs;
  for (ir::ValueId v : a.graph().inputs) ordered_inputs.push_back(inputs.at(a.graph().value(v).name));
  std::vector<OtherGraph> others = sequence_others(a, ordered_inputs, scratch_dir, model_path);
  // A at another length, where the model has a size to vary: the same compiled model, other shapes.
  const std::map<std::string, Tensor> other_length = by_input_name(a.graph(), other_length_inputs(a.graph(), ordered_inputs));

  auto hashes = [&](const NamedTensors& out) {
    std::vector<Tensor> ordered;
    for (const auto& name : outputs) ordered.push_back(out.at(name));
    return output_hashes(ordered);
  };
  Runner server = Runner::persistent(command);
  auto call = [&](const std::string& path, const std::map<std::string, Tensor>& feeds) {
    return hashes(server.run(path, feeds, outputs, scratch_dir + "/call"));
  };
  std::vector<DeterminismRun> runs;
  try {
    runs.push_back({"in-process A1", call(model_path, inputs), "", true, "A", model_path});
  } catch (const Error& e) {
    if (is_not_v2_error(e)) {
      if (note) *note = "in-process sequence not run: " + std::string(e.what()).substr(0, 300);
      return {};
    }
    runs.push_back({"in-process A1", {}, e.what(), true, "A", model_path});
  }
  auto attempt = [&](const std::string& mode, const std::string& path, const std::map<std::string, Tensor>& feeds,
                     const std::string& expect) {
    DeterminismRun r{mode, {}, "", true, expect, path};
    try {
      r.sha256 = call(path, feeds);
    } catch (const Error& e) {
      r.error = e.what();
    }
    runs.push_back(std::move(r));
  };
  attempt("in-process A1 again", model_path, inputs, "A");
  if (!other_length.empty()) attempt("in-process A at length B", model_path, other_length, "A at length B");
  for (const auto& o : others) attempt("in-process " + o.label, o.path, inputs, o.expect);
  attempt("in-process A2", model_path, inputs, "A");

  // What a fresh process of the runner gives for each model other than A (one call each).
  if (fresh) {
    Runner one_shot = Runner::command(command);
    auto fresh_run = [&](const std::string& key, const std::string& path, const std::map<std::string, Tensor>& feeds) {
      try {
        (*fresh)[key] = hashes(one_shot.run(path, feeds, outputs, scratch_dir + "/fresh_" + std::to_string(fresh->size())));
      } catch (const Error& e) {
        if (note) *note = "no fresh run of " + key + ": " + std::string(e.what()).substr(0, 200);
      }
    };
    if (!other_length.empty()) fresh_run("A at length B", model_path, other_length);
    for (const auto& o : others)
      if (o.expect != "A") fresh_run(o.expect, o.path, inputs);
  }
  return runs;
}

void find_differences(DeterminismReport& report) {
  report.differences.clear();
  report.first_change.clear();
  auto output_name = [&](size_t i) {
    return i < report.output_names.size() ? report.output_names[i] : "#" + std::to_string(i);
  };
  // A's reference bits: its first successful fresh run, else (no fresh processes) its first run.
  const DeterminismRun* first = nullptr;
  for (const auto& r : report.runs)
    if (r.of_a && r.error.empty() && r.expect.empty()) {
      first = &r;
      break;
    }
  if (!first)
    for (const auto& r : report.runs)
      if (r.of_a && r.error.empty() && r.expect == "A") {
        first = &r;
        break;
      }
  // Which model's fresh bits a run's bits are (to name a stale answer): A's or report.fresh's.
  auto whose_bits = [&](const std::vector<std::string>& bits) -> std::string {
    if (first && bits == first->sha256) return "A";
    for (const auto& [key, fresh] : report.fresh)
      if (bits == fresh) return key;
    return "";
  };
  for (const auto& r : report.runs) {
    if (!r.error.empty()) {
      report.differences.push_back(r.mode + (r.of_a ? "" : " (other graph)") + " failed: " + r.error);
      continue;
    }
    if (!r.of_a || !first || &r == first) continue;
    const std::vector<std::string>* expected = &first->sha256;
    std::string against = first->mode;
    if (!r.expect.empty() && r.expect != "A") {
      auto it = report.fresh.find(r.expect);
      if (it == report.fresh.end()) {
        report.notes.push_back(r.mode + " not compared: no fresh run of " + r.expect);
        continue;
      }
      expected = &it->second;
      against = r.expect + " in a fresh process";
    }
    if (r.sha256.size() != expected->size()) {
      report.differences.push_back(r.mode + " returned " + std::to_string(r.sha256.size()) + " outputs, " + against +
                                   " " + std::to_string(expected->size()));
      if (report.first_change.empty()) report.first_change = r.mode;
      continue;
    }
    bool differs = false;
    for (size_t i = 0; i < r.sha256.size(); ++i)
      if (r.sha256[i] != (*expected)[i]) {
        report.differences.push_back("output " + output_name(i) + ": SHA-256 of " + r.mode + " differs from " + against);
        differs = true;
      }
    if (!differs) continue;
    if (report.first_change.empty()) report.first_change = r.mode;
    const std::string model = r.expect.empty() ? "A" : r.expect;
    const std::string other = whose_bits(r.sha256);
    if (!other.empty() && other != model)
      report.differences.push_back(r.mode + " (model " + model + ") gave " + other +
                                   "'s bits: stale compiled state served for another model");
  }
  if (!first) report.differences.push_back("no run of the model succeeded");
}

}  // namespace lockstep::diff
