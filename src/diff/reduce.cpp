#include "diff/reduce.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"
#include "core/hash.h"
#include "core/npy.h"
#include "diff/extract.h"
#include "diff/metrics_json.h"
#include "diff/tolerance.h"
#include "onnx/export.h"

namespace lockstep::diff {

namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of(
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/=,:+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Recheck {
  bool diverges = false;
  Metrics worst;
  NamedTensors ref, test;
};

// Runs both sides on the reduced model; diverges when any output exceeds `tolerance`.
Recheck recheck(const std::string& model, const Runner& ref, const Runner& test,
                const NamedTensors& inputs, const std::vector<std::string>& outputs,
                double tolerance, const std::string& work) {
  Recheck r;
  r.ref = ref.run(model, inputs, outputs, work + "/ref");
  r.test = test.run(model, inputs, outputs, work + "/test");
  double worst_ratio = -1;
  for (const auto& name : outputs) {
    Metrics m = compare(r.test.at(name), r.ref.at(name));
    bool bad =
        !m.shape_match || m.nan_count_test != m.nan_count_ref || exceeds(m.rel_l2, tolerance);
    double ratio = bad && !std::isfinite(m.rel_l2) ? 1e300 : m.rel_l2 / tolerance;
    if (!m.shape_match) ratio = 1e300;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      r.worst = m;
    }
    r.diverges = r.diverges || bad;
  }
  return r;
}

void check_out_dir(const std::string& out_dir) {
  std::error_code ec;
  if (out_dir.empty()) throw Error(ErrorCode::InvalidArgument, "reduce: no output folder (-o DIR)");
  if (fs::exists(out_dir, ec) && !(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec)))
    throw Error(ErrorCode::InvalidArgument, "reduce: '" + out_dir +
                                                "' exists and is not an empty folder; "
                                                "give a new one");
}

}  // namespace

ReduceResult reduce(const std::string& model_path, const Runner& ref, const Runner& test,
                    const std::vector<Tensor>& inputs, const std::string& out_dir,
                    const ReduceOptions& options) {
  check_out_dir(out_dir);
  ReduceResult result;
  result.out_dir = out_dir;
  ExternalBisectOptions bisect_options = options.bisect;
  if (!bisect_options.trace)
    bisect_options.trace = compute_reference_trace(model_path, inputs, bisect_options.input_shapes,
                                                   bisect_options.calibrate);
  std::shared_ptr<const ReferenceTrace> trace = bisect_options.trace;
  result.bisect = bisect_external(model_path, ref, test, inputs, bisect_options);
  if (!result.bisect.diverged) return result;
  result.diverged = true;

  const ir::Graph& g = trace->graph;
  const ir::Node& node = g.nodes.at(static_cast<size_t>(result.bisect.node_index));
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

  // Staging folder beside out_dir, renamed at the end.
  fs::path target = fs::absolute(out_dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::create_directories(target.parent_path());
  std::string tmpl =
      (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw Error(ErrorCode::Io, "cannot create a staging folder " + tmpl);
  fs::path stage(tmpl);
  std::string scratch = (stage / ".scratch").string();
  try {
    // The reference side's values of the node's inputs.
    NamedTensors node_inputs;
    std::map<std::string, Tensor> model_inputs;
    for (size_t i = 0; i < g.inputs.size(); ++i)
      model_inputs[g.value(g.inputs[i]).name] = inputs.at(i);
    if (ref.is_reference()) {
      for (ir::ValueId v : in_ids) node_inputs[g.value(v).name] = trace->values[v];
    } else {
      std::vector<std::string> wanted;
      for (const auto& name : in_names)
        if (model_inputs.count(name))
          node_inputs[name] = model_inputs[name];
        else
          wanted.push_back(name);
      if (!wanted.empty()) {
        ir::Graph up = extract_subgraph(g, wanted);
        fs::create_directories(scratch);
        std::string up_path = scratch + "/upstream.onnx";
        onnx::export_model(up, up_path);
        NamedTensors feeds;
        for (ir::ValueId v : up.inputs) feeds[up.value(v).name] = model_inputs.at(up.value(v).name);
        for (auto& [name, t] : ref.run(up_path, feeds, wanted, scratch + "/upstream"))
          node_inputs[name] = t;
      }
    }
    for (ir::ValueId v : in_ids) {
      Tensor& t = node_inputs.at(g.value(v).name);
      if (t.dtype() != g.value(v).dtype) t = t.to(g.value(v).dtype);
    }

    ir::Graph reduced = extract_subgraph(g, out_names, in_names);
    reduced.name = "reproducer";
    result.kept_nodes = static_cast<int>(reduced.nodes.size());
    double tolerance =
        result.bisect.local_checked ? result.bisect.local_tolerance : result.bisect.tolerance;
    if (tolerance <= 0) tolerance = bisect_options.floor;

    // Re-check with the original weights (scratch copy when synthetic weights will replace them).
    fs::create_directories(scratch);
    std::string original_model =
        options.synthetic ? scratch + "/original.onnx" : (stage / "model.onnx").string();
    onnx::export_model(reduced, original_model);
    Recheck check =
        recheck(original_model, ref, test, node_inputs, out_names, tolerance, scratch + "/recheck");
    result.still_diverges = check.diverges;
    result.recheck = check.worst;
    if (options.synthetic) {
      ir::Graph synthetic = reduced;
      synthesize_weights(synthetic, *options.synthetic);
      onnx::export_model(synthetic, (stage / "model.onnx").string());
      result.synthetic = true;
      check = recheck((stage / "model.onnx").string(), ref, test, node_inputs, out_names, tolerance,
                      scratch + "/recheck_synthetic");
      result.synthetic_diverges = check.diverges;
      result.synthetic_recheck = check.worst;
    }
    fs::remove_all(scratch);

    fs::create_directories(stage / "inputs");
    fs::create_directories(stage / "ref_outputs");
    fs::create_directories(stage / "test_outputs");
    std::vector<std::string> files = {"model.onnx"};
    for (const auto& name : in_names) {
      std::string rel = "inputs/" + runner_file_stem(name) + ".npy";
      write_npy((stage / rel).string(), node_inputs.at(name));
      files.push_back(rel);
    }
    for (const auto& name : out_names) {
      std::string stem = runner_file_stem(name) + ".npy";
      write_npy((stage / "ref_outputs" / stem).string(), check.ref.at(name));
      write_npy((stage / "test_outputs" / stem).string(), check.test.at(name));
      files.push_back("ref_outputs/" + stem);
      files.push_back("test_outputs/" + stem);
    }

    // Commands that reproduce it (paths relative to the folder's final name).
    const std::string dir = out_dir;
    std::string input_args;
    for (const auto& name : in_names)
      input_args +=
          " --input " + quote(name + "=" + dir + "/inputs/" + runner_file_stem(name) + ".npy");
    bool both_backends =
        ref.kind() == Runner::Kind::Backend && test.kind() == Runner::Kind::Backend;
    if (both_backends)
      result.commands.push_back(options.lockstep_command + " compare " +
                                quote(dir + "/model.onnx") + " --ref " + quote(ref.spec()) +
                                " --test " + quote(test.spec()) + input_args);
    std::string names;
    for (const auto& name : out_names) names += " " + quote(name);
    for (const Runner* side : {&ref, &test})
      if (side->kind() == Runner::Kind::Command)
        result.commands.push_back(
            side->spec() + " " + quote(dir + "/model.onnx") + " " + quote(dir + "/inputs") + " " +
            quote(std::string(side == &ref ? "ref" : "test") + "_out") + names);
    result.commands.push_back(options.lockstep_command + " reduce " + quote(dir + "/model.onnx") +
                              " --ref " + quote(ref.spec()) + " --test " + quote(test.spec()) +
                              input_args + " -o " + quote(dir + ".recheck"));

    nlohmann::json manifest = {
        {"tool", "lockstep reduce"},
        {"source_model", model_path},
        {"ref", ref.spec()},
        {"test", test.spec()},
        {"node",
         {{"index", result.bisect.node_index + 1},
          {"name", result.bisect.node_name},
          {"op", result.bisect.op}}},
        {"verdict", result.bisect.verdict},
        {"inputs", in_names},
        {"outputs", out_names},
        {"tolerance_rel_l2", tolerance},
        {"recheck",
         {{"diverges", result.still_diverges}, {"metrics", metrics_json(result.recheck)}}},
        {"inputs_note",
         "inputs are the reference side's values of the node's inputs in the source model"}};
    if (result.synthetic)
      manifest["synthetic_weights"] = {{"sigma", options.synthetic->sigma},
                                       {"seed", options.synthetic->seed},
                                       {"diverges", result.synthetic_diverges},
                                       {"metrics", metrics_json(result.synthetic_recheck)}};
    nlohmann::json sums = nlohmann::json::object();
    for (const auto& rel : files) sums[rel] = sha256_hex(read_file((stage / rel).string()));
    manifest["sha256"] = sums;
    manifest["commands"] = result.commands;
    write_file_atomic((stage / "manifest.json").string(), manifest.dump(2) + "\n");
    files.push_back("manifest.json");
    result.files = files;

    std::error_code ec;
    if (fs::exists(target, ec)) fs::remove(target);  // an empty folder (checked above)
    fs::rename(stage, target);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(stage, ec);
    throw;
  }
  return result;
}

std::string format_reduce(const ReduceResult& r) {
  std::ostringstream out;
  out << format_external_bisect(r.bisect);
  if (!r.diverged) {
    out << "nothing to reduce: the two sides agree\n";
    return out.str();
  }
  out << "reduced to " << r.kept_nodes << " node (" << r.bisect.node_name << ", " << r.bisect.op
      << ") fed the reference's values of its inputs\n";
  out << "re-check (original weights): "
      << (r.still_diverges ? "still diverges" : "DOES NOT DIVERGE") << ", rel_l2 "
      << r.recheck.rel_l2 << ", cosine " << r.recheck.cosine << "\n";
  if (r.synthetic)
    out << "re-check (synthetic weights): "
        << (r.synthetic_diverges
                ? "still diverges"
                : "the divergence does NOT survive synthetic weights (the written model has them)")
        << ", rel_l2 " << r.synthetic_recheck.rel_l2 << ", cosine " << r.synthetic_recheck.cosine
        << "\n";
  out << "wrote " << r.out_dir << ":";
  for (const auto& f : r.files) out << " " << f;
  out << "\nreproduce with:\n";
  for (const auto& c : r.commands) out << "  " << c << "\n";
  return out.str();
}

}  // namespace lockstep::diff
