// `lockstep extract`: the subgraph computing the named tensors from the named inputs, written as
// a valid ONNX file (the C++ counterpart of onnx.utils.extract_model). Works on the imported
// graph, so names are the model's own; the result is re-imported and shape-checked.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "diff/extract.h"
#include "lockstep/lockstep.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "passes/pipeline.h"

namespace lockstep::cli {

int cmd_extract(const ExtractArgs& args) {
  if (args.out.empty())
    throw Error(ErrorCode::InvalidArgument, "extract: give the output file with -o OUT.onnx");
  ir::Graph g = onnx::import_model(args.model);
  try {  // intermediate tensors made inputs need their types: known once input shapes are bound
    passes::bind_inputs(g, {});
    diff::annotate_types(g);
  } catch (const Error&) {
    // symbolic input dims: declared types only
  }
  ir::Graph sub = diff::extract_subgraph(g, args.outputs, args.inputs);
  onnx::export_model(sub, args.out);
  // The written file must import and pass shape inference (a malformed cut fails here).
  ir::Graph back = onnx::import_model(args.out);
  Model model = Model::from_graph(back);
  bool prepared = true;
  try {
    prepare(model, Options{});
  } catch (const Error& e) {
    if (e.code() != ErrorCode::ShapeMismatch) throw;  // symbolic dims only: shapes need inputs
    prepared = false;
  }
  int constants = 0;
  for (const auto& v : sub.values) constants += v.constant.defined() ? 1 : 0;
  if (args.common.json) {
    nlohmann::json j = {{"model", args.model},
                        {"out", args.out},
                        {"nodes", sub.nodes.size()},
                        {"source_nodes", g.nodes.size()},
                        {"constants", constants},
                        {"inputs", nlohmann::json::array()},
                        {"outputs", nlohmann::json::array()},
                        {"shape_checked", prepared}};
    for (ir::ValueId v : sub.inputs) j["inputs"].push_back(sub.value(v).name);
    for (ir::ValueId v : sub.outputs) j["outputs"].push_back(sub.value(v).name);
    std::cout << j.dump(2) << '\n';
    return kExitOk;
  }
  std::cout << "extracted " << sub.nodes.size() << " of " << g.nodes.size() << " nodes, "
            << constants << " initializers -> " << args.out
            << (prepared ? " (re-imported, shapes checked)" : " (re-imported)") << "\n  inputs:";
  for (ir::ValueId v : sub.inputs)
    std::cout << ' ' << sub.value(v).name << shape_str(sub.value(v).shape);
  std::cout << "\n  outputs:";
  for (ir::ValueId v : sub.outputs) std::cout << ' ' << sub.value(v).name;
  std::cout << '\n';
  return kExitOk;
}

}  // namespace lockstep::cli
