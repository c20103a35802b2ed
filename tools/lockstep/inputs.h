// Model inputs for the CLI: from .npy files, an .npz, NAME=FILE pairs, or drawn from a seed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::cli {

struct ModelInputs {
  std::vector<Tensor> tensors;        // in graph-input order
  std::map<std::string, Shape> bind;  // shapes for the model's symbolic dims (Options.input_shapes)
  bool drawn = false;                 // true when drawn from args.seed
};

// Checks count, dtype and every static dim against the model's declared inputs (an Error naming
// the input otherwise). With no input arguments, draws uniform[-1,1] floats / zero integers.
ModelInputs gather_inputs(const ir::Graph& graph, const InputArgs& args);
bool has_input_args(const InputArgs& args);

// A model file, or the embedded default (zoo::seed_flow_graph) when `path` is empty.
Model load_model_or_default(const std::string& path);

// For the tools that need one static graph (bisect): a model whose sizes are only known at run
// time comes back specialised to these inputs (dynamic/specialize.h: the reference's size-deciding
// values become constants), with a note on stderr naming how many; any other model unchanged.
Model specialise_for_tools(const Model& model, const ModelInputs& inputs, uint64_t seed, const std::string& command);

// A value name made safe as a file name: [A-Za-z0-9._-] kept, anything else → '_'.
std::string file_stem(const std::string& value_name);

}  // namespace lockstep::cli
