// `lockstep info`: what a model holds — ops, nodes, parameters, inputs/outputs, and with
// --shapes every node's output shapes after preparation.
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/f64_default.h"
#include "commands.h"
#include "inputs.h"
#include "table.h"

namespace lockstep::cli {
namespace {

std::string shape_text(const ir::Value& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    bool named = v.shape[i] < 0 && i < v.dim_params.size() && !v.dim_params[i].empty();
    s += (i ? "," : "") + (named ? v.dim_params[i] : v.shape[i] < 0 ? "?" : std::to_string(v.shape[i]));
  }
  return s + "]";
}

nlohmann::json io_json(const ir::Graph& g, const std::vector<ir::ValueId>& ids) {
  nlohmann::json out = nlohmann::json::array();
  for (ir::ValueId v : ids)
    out.push_back({{"name", g.value(v).name}, {"dtype", dtype_name(g.value(v).dtype)}, {"shape", shape_text(g.value(v))}});
  return out;
}

}  // namespace

int cmd_info(const InfoArgs& args) {
  Model model = load_model_or_default(args.model);
  const ir::Graph& g = model.graph();
  std::map<std::string, int> histogram;
  for (const auto& n : g.nodes) ++histogram[ir::op_name(n.op)];
  // Parameters: the constant values that nodes read (initializers and folded Constant nodes).
  std::set<ir::ValueId> params;
  for (const auto& n : g.nodes)
    for (ir::ValueId v : n.inputs)
      if (g.is_constant(v)) params.insert(v);
  int64_t param_count = 0, param_bytes = 0;
  for (ir::ValueId v : params) {
    param_count += g.value(v).constant.numel();
    param_bytes += static_cast<int64_t>(g.value(v).constant.nbytes());
  }
  nlohmann::json report = {{"model", args.model.empty() ? "(embedded default)" : args.model},
                           {"graph", g.name},
                           {"opset", g.opset},
                           {"nodes", g.nodes.size()},
                           {"ops", histogram},
                           {"parameters", {{"tensors", params.size()}, {"elements", param_count}, {"bytes", param_bytes}}},
                           {"inputs", io_json(g, g.inputs)},
                           {"outputs", io_json(g, g.outputs)}};
  // Which Conv and MatMul nodes accumulate in float64 (Options::f64_accumulate, docs/accuracy.md).
  Options f64_options;
  f64_options.f64_accumulate = args.common.f64_accumulate_option();
  const std::vector<std::string> f64_prefixes = resolve_f64_accumulate(g, f64_options);
  int64_t f64_nodes = 0;
  for (const auto& n : g.nodes)
    f64_nodes += (n.op == ir::Op::Conv || n.op == ir::Op::MatMul) && f64_accumulates(f64_prefixes, n.name);
  report["f64_accumulate"] = {{"prefixes", f64_prefixes}, {"conv_matmul_nodes", f64_nodes},
                              {"default", !f64_options.f64_accumulate.has_value()},
                              {"cuda_prefixes", resolve_f64_accumulate_for(g, f64_options, "cuda")}};

  std::optional<ir::Graph> prepared;
  std::string prepare_error;
  if (args.shapes) {
    Options options;
    options.threads = args.common.threads;
    try {
      prepared = prepare(model, options);
    } catch (const Error& e) {
      prepare_error = e.what();
    }
    if (prepared) {
      nlohmann::json nodes = nlohmann::json::array();
      for (const auto& n : prepared->nodes) {
        nlohmann::json outs = nlohmann::json::array();
        for (ir::ValueId v : n.outputs)
          if (v != ir::kNoValue) outs.push_back(shape_text(prepared->value(v)));
        nodes.push_back({{"name", n.name}, {"op", ir::op_name(n.op)}, {"onnx_names", n.onnx_names()}, {"shapes", outs}});
      }
      report["prepared"] = {{"nodes", prepared->nodes.size()}, {"node_shapes", nodes}};
      if (prepared->plan) report["prepared"]["arena_bytes"] = prepared->plan->arena_bytes;
    } else {
      report["prepared"] = {{"error", prepare_error}};
    }
  }

  // --kernels: what the backend runs for each node (oneDNN's choice, lockstep's own kernels).
  std::vector<std::string> impls;
  const ir::Graph* compiled = nullptr;
  std::unique_ptr<Executable> exe;
  if (!args.kernels.empty()) {
    Options options;
    options.threads = args.common.threads;
    try {
      exe = compile(model, args.kernels, options);
      compiled = &exe->graph();
      impls = exe->kernel_implementations();
    } catch (const Error& e) {
      prepare_error = e.what();
    }
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; compiled && i < compiled->nodes.size(); ++i) {
      const auto& n = compiled->nodes[i];
      const std::string out = n.outputs.empty() || n.outputs[0] == ir::kNoValue ? "" : shape_text(compiled->value(n.outputs[0]));
      rows.push_back({{"name", n.name}, {"op", ir::op_name(n.op)}, {"shape", out},
                      {"implementation", i < impls.size() ? impls[i] : ""}});
    }
    report["kernels"] = compiled ? nlohmann::json{{"backend", args.kernels}, {"nodes", rows}}
                                 : nlohmann::json{{"backend", args.kernels}, {"error", prepare_error}};
  }

  if (args.common.json) {
    std::cout << report.dump(2) << '\n';
    return prepare_error.empty() ? kExitOk : kExitFail;
  }
  std::cout << "model:      " << report["model"].get<std::string>() << " (graph '" << g.name << "', opset " << g.opset
            << ")\n";
  std::cout << "nodes:      " << g.nodes.size() << '\n';
  std::cout << "parameters: " << param_count << " in " << params.size() << " tensors, " << param_bytes << " bytes\n";
  std::cout << "ops:       ";
  for (const auto& [op, count] : histogram) std::cout << ' ' << op << ' ' << count;
  std::cout << "\nfloat64 accumulation: ";
  if (f64_prefixes.empty()) std::cout << "none";
  for (size_t i = 0; i < f64_prefixes.size(); ++i) std::cout << (i ? ", " : "") << f64_prefixes[i];
  if (!f64_prefixes.empty()) std::cout << " (" << f64_nodes << " Conv/MatMul nodes)";
  std::cout << (f64_options.f64_accumulate ? "" : " — the model's default, --f64-accumulate changes it") << "\n\n";
  Table io({"", "name", "dtype", "shape"});
  for (ir::ValueId v : g.inputs) io.add({"input", g.value(v).name, dtype_name(g.value(v).dtype), shape_text(g.value(v))});
  for (ir::ValueId v : g.outputs) io.add({"output", g.value(v).name, dtype_name(g.value(v).dtype), shape_text(g.value(v))});
  io.print(std::cout);
  if (args.shapes) {
    std::cout << '\n';
    if (!prepared) {
      std::cout << "shapes: cannot prepare the model: " << prepare_error << '\n';
      return kExitFail;
    }
    std::cout << "after passes: " << prepared->nodes.size() << " nodes";
    if (prepared->plan) std::cout << ", arena " << prepared->plan->arena_bytes << " bytes";
    std::cout << "\n";
    Table t({"#", "node", "op", "output shapes", "fused ONNX nodes"});
    for (size_t i = 0; i < prepared->nodes.size(); ++i) {
      const auto& n = prepared->nodes[i];
      std::string shapes, fused;
      for (ir::ValueId v : n.outputs)
        if (v != ir::kNoValue) shapes += (shapes.empty() ? "" : " ") + shape_text(prepared->value(v));
      auto names = n.onnx_names();
      for (size_t k = 1; k < names.size(); ++k) fused += (k > 1 ? ", " : "") + names[k];
      t.add({std::to_string(i + 1), n.name, ir::op_name(n.op), shapes, fused});
    }
    t.print(std::cout);
  }
  if (!args.kernels.empty()) {
    std::cout << '\n';
    if (!compiled) {
      std::cout << "kernels: cannot compile for " << args.kernels << ": " << prepare_error << '\n';
      return kExitFail;
    }
    std::cout << "kernels (" << args.kernels << "):\n";
    Table t({"#", "node", "op", "output shape", "implementation"});
    for (const auto& row : report["kernels"]["nodes"])
      t.add({std::to_string(t.rows() + 1), row["name"], row["op"], row["shape"], row["implementation"]});
    t.print(std::cout);
  }
  return kExitOk;
}

}  // namespace lockstep::cli
