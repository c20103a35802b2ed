#include "inputs.h"

#include <iostream>

#include <cctype>
#include <set>

#include "core/npy.h"
#include "dynamic/executable.h"
#include "dynamic/specialize.h"
#include "zoo/random.h"
#include "zoo/seed_flow.h"

namespace lockstep::cli {
namespace {

void check_against_declared(const ir::Value& declared, const Tensor& t, ModelInputs& out) {
  if (t.dtype() != declared.dtype)
    throw Error(ErrorCode::DTypeMismatch, "input '" + declared.name + "' must be " + dtype_name(declared.dtype) +
                                              ", the file holds " + dtype_name(t.dtype()));
  if (t.rank() != static_cast<int64_t>(declared.shape.size()))
    throw Error(ErrorCode::ShapeMismatch, "input '" + declared.name + "' must have shape " +
                                              shape_str(declared.shape) + ", the file holds " + shape_str(t.shape()));
  bool symbolic = false;
  for (size_t d = 0; d < declared.shape.size(); ++d) {
    if (declared.shape[d] < 0) symbolic = true;
    else if (declared.shape[d] != t.shape()[d])
      throw Error(ErrorCode::ShapeMismatch, "input '" + declared.name + "' must have shape " +
                                                shape_str(declared.shape) + ", the file holds " + shape_str(t.shape()));
  }
  if (symbolic) out.bind[declared.name] = t.shape();
}

Tensor draw(const ir::Value& declared, zoo::NormalGenerator& gen) {
  for (int64_t d : declared.shape)
    if (d < 0)
      throw Error(ErrorCode::MissingInput, "input '" + declared.name + "' has symbolic shape " +
                                               shape_str(declared.shape) + ": give it with --input " + declared.name +
                                               "=FILE.npy");
  Tensor t(declared.dtype, declared.shape);
  if (declared.dtype == DType::Float32)
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(2 * gen.next_uniform() - 1);
  else if (declared.dtype == DType::Float64)
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = 2 * gen.next_uniform() - 1;
  return t;  // integers and bools stay zero
}

}  // namespace

bool has_input_args(const InputArgs& args) { return !args.files.empty() || !args.npz.empty() || !args.named.empty(); }

ModelInputs gather_inputs(const ir::Graph& graph, const InputArgs& args) {
  ModelInputs out;
  std::map<std::string, Tensor> by_name;
  std::vector<std::string> names;
  for (ir::ValueId v : graph.inputs) names.push_back(graph.value(v).name);
  std::set<std::string> known(names.begin(), names.end());

  if (args.files.size() > names.size())
    throw Error(ErrorCode::InvalidArgument, "--inputs gives " + std::to_string(args.files.size()) +
                                                " files but the model has " + std::to_string(names.size()) + " inputs");
  for (size_t i = 0; i < args.files.size(); ++i) by_name[names[i]] = read_npy(args.files[i]);
  if (!args.npz.empty()) {
    auto arrays = read_npz(args.npz);
    for (auto& [key, tensor] : arrays) {
      std::string name = key;
      // np.savez(path, a, b) names arrays arr_0, arr_1, ...: map those to graph-input order.
      if (!known.count(name) && name.rfind("arr_", 0) == 0) {
        std::string digits = name.substr(4);
        bool numeric = !digits.empty() && digits.size() < 6 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
        if (numeric && std::stoul(digits) < names.size()) name = names[std::stoul(digits)];
      }
      if (!known.count(name))
        throw Error(ErrorCode::InvalidArgument, "'" + args.npz + "' holds '" + key + "', which is no model input");
      by_name[name] = tensor;
    }
  }
  for (const std::string& pair : args.named) {
    size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size())
      throw Error(ErrorCode::InvalidArgument, "--input wants NAME=FILE, got '" + pair + "'");
    std::string name = pair.substr(0, eq);
    if (!known.count(name)) throw Error(ErrorCode::InvalidArgument, "'" + name + "' is no model input");
    by_name[name] = read_npy(pair.substr(eq + 1));
  }

  if (!has_input_args(args)) {
    out.drawn = true;
    zoo::NormalGenerator gen(args.seed);
    for (ir::ValueId v : graph.inputs) out.tensors.push_back(draw(graph.value(v), gen));
    return out;
  }
  for (ir::ValueId v : graph.inputs) {
    const ir::Value& declared = graph.value(v);
    auto it = by_name.find(declared.name);
    if (it == by_name.end())
      throw Error(ErrorCode::MissingInput, "no value for model input '" + declared.name + "' " +
                                               shape_str(declared.shape) + " (use --input " + declared.name + "=FILE)");
    check_against_declared(declared, it->second, out);
    out.tensors.push_back(it->second);
  }
  return out;
}

Model load_model_or_default(const std::string& path) {
  if (path.empty()) return Model::from_graph(zoo::seed_flow_graph());
  return Model::load(path);
}

std::string file_stem(const std::string& value_name) {
  std::string s = value_name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

Model specialise_for_tools(const Model& model, const ModelInputs& inputs, uint64_t seed, const std::string& command) {
  Options options;
  options.input_shapes = inputs.bind;
  if (!dynamic::needs_run_time_shapes(model.graph(), options)) return model;
  dynamic::Specialised s = dynamic::specialise_to_inputs(model.graph(), inputs.tensors, seed);
  std::cerr << "lockstep: " << command << ": the model's sizes depend on run-time values; specialised to these inputs: "
            << s.fixed.size() << " size-deciding values (NonZero results, computed shapes and bounds) are fixed to "
            << "the float64 reference's, so the tested side follows the reference's discrete decisions\n";
  return Model::from_graph(std::move(s.graph));
}

}  // namespace lockstep::cli
