#include "diff/determinism.h"

#include <cstring>
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

std::vector<Tensor> shorter_call(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
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

}  // namespace

std::vector<DeterminismRun> in_process_sequence(const Model& a, const std::vector<Tensor>& inputs,
                                                const std::string& backend, const Options& options,
                                                const std::vector<OtherGraph>& others) {
  std::vector<DeterminismRun> runs;
  std::vector<std::unique_ptr<Executable>> alive;  // every executable stays alive to the end
  auto attempt = [&](const std::string& mode, bool of_a, auto&& body) {
    DeterminismRun r{mode, {}, "", of_a};
    try {
      r.sha256 = output_hashes(body());
    } catch (const Error& e) {
      r.error = e.what();
    }
    runs.push_back(std::move(r));
  };
  Executable* a1 = nullptr;
  attempt("A1", true, [&] {
    alive.push_back(compile(a, backend, options));
    a1 = alive.back().get();
    return a1->run(inputs);
  });
  attempt("A1 again", true, [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  // Shape churn (run-time shapes): the same executable at another length, then A's length again.
  if (a1 && dynamic::stats(*a1)) {
    std::vector<Tensor> other_length = shorter_call(a.graph(), inputs);
    if (!other_length.empty()) {
      attempt("A1 at length B", false, [&] { return a1->run(other_length); });
      attempt("A1 after length B", true, [&] { return a1->run(inputs); });
    }
  }
  for (const auto& other : others)
    attempt(other.label, false, [&] {
      Options o = options;
      o.input_shapes.clear();
      o.observe.clear();
      alive.push_back(compile(other.model, backend, o));
      return alive.back()->run(other.inputs);
    });
  attempt("A2", true, [&] {
    alive.push_back(compile(a, backend, options));
    return alive.back()->run(inputs);
  });
  attempt("A1 after A2", true, [&] {
    if (!a1) throw Error(ErrorCode::Internal, "A1 did not compile");
    return a1->run(inputs);
  });
  return runs;
}

std::vector<DeterminismRun> runner_in_process_sequence(const std::string& command, const std::string& model_path,
                                                       const std::map<std::string, Tensor>& inputs,
                                                       const std::vector<std::string>& outputs,
                                                       const std::string& scratch_dir, std::string* note) {
  // B and C: A's graph with seeded synthetic weights (same names and shapes: a runtime that
  // caches by name or shape sees "the same" graph with other numbers).
  std::vector<std::pair<std::string, std::string>> others;
  for (uint64_t seed : {1, 2}) {
    ir::Graph g = onnx::import_model(model_path);
    synthesize_weights(g, SyntheticWeights{0.1, seed});
    const std::string path = scratch_dir + (seed == 1 ? "/B.onnx" : "/C.onnx");
    onnx::export_model(g, path);
    others.emplace_back(seed == 1 ? "in-process B" : "in-process C", path);
  }
  Runner server = Runner::persistent(command);
  auto call = [&](const std::string& path) {
    NamedTensors out = server.run(path, inputs, outputs, scratch_dir + "/call");
    std::vector<Tensor> ordered;
    for (const auto& name : outputs) ordered.push_back(out.at(name));
    return ordered;
  };
  std::vector<DeterminismRun> runs;
  try {
    runs.push_back({"in-process A1", output_hashes(call(model_path)), "", true});
  } catch (const Error& e) {
    if (is_not_v2_error(e)) {
      if (note) *note = "in-process sequence not run: " + std::string(e.what()).substr(0, 300);
      return {};
    }
    runs.push_back({"in-process A1", {}, e.what(), true});
  }
  auto attempt = [&](const std::string& mode, const std::string& path, bool of_a) {
    DeterminismRun r{mode, {}, "", of_a};
    try {
      r.sha256 = output_hashes(call(path));
    } catch (const Error& e) {
      r.error = e.what();
    }
    runs.push_back(std::move(r));
  };
  attempt("in-process A1 again", model_path, true);
  for (const auto& [label, path] : others) attempt(label, path, false);
  attempt("in-process A2", model_path, true);
  return runs;
}

void find_differences(DeterminismReport& report) {
  report.differences.clear();
  report.first_change.clear();
  const DeterminismRun* first = nullptr;
  for (const auto& r : report.runs) {
    if (!r.of_a) {
      if (!r.error.empty()) report.differences.push_back(r.mode + " (other graph) failed: " + r.error);
      continue;
    }
    if (!r.error.empty()) {
      report.differences.push_back(r.mode + " failed: " + r.error);
      continue;
    }
    if (!first) {
      first = &r;
      continue;
    }
    if (r.sha256.size() != first->sha256.size()) {
      report.differences.push_back(r.mode + " returned " + std::to_string(r.sha256.size()) + " outputs, " + first->mode +
                                   " " + std::to_string(first->sha256.size()));
      continue;
    }
    for (size_t i = 0; i < r.sha256.size(); ++i)
      if (r.sha256[i] != first->sha256[i]) {
        std::string name = i < report.output_names.size() ? report.output_names[i] : "#" + std::to_string(i);
        report.differences.push_back("output " + name + ": SHA-256 of " + r.mode + " differs from " + first->mode);
        if (report.first_change.empty()) report.first_change = r.mode;
      }
  }
  if (!first) report.differences.push_back("no run of the model succeeded");
}

}  // namespace lockstep::diff
