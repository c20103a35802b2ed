#include "voices/piper.h"

#include <cmath>
#include <string>

namespace lockstep::voices {

int input_index(const ir::Graph& graph, std::string_view name) {
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    if (graph.value(graph.inputs[i]).name == name) return static_cast<int>(i);
  return -1;
}

namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

bool is_piper_voice(const ir::Graph& graph) {
  int in = input_index(graph, "input"), len = input_index(graph, "input_lengths"), sc = input_index(graph, "scales");
  if (in < 0 || len < 0 || sc < 0) return false;
  const ir::Value& s = graph.value(graph.inputs[static_cast<size_t>(sc)]);
  return graph.value(graph.inputs[static_cast<size_t>(in)]).dtype == DType::Int64 &&
         graph.value(graph.inputs[static_cast<size_t>(len)]).dtype == DType::Int64 && is_floating(s.dtype) &&
         s.shape.size() == 1;
}

void check_piper_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  if (!is_piper_voice(graph)) return;
  auto at = [&](const char* name) -> const Tensor& { return inputs.at(static_cast<size_t>(input_index(graph, name))); };
  const Tensor& ids = at("input");
  const Tensor& lengths = at("input_lengths");
  const Tensor& scales = at("scales");
  if (ids.rank() != 2 || lengths.rank() != 1 || scales.rank() != 1 || scales.numel() != 3) return;  // shape checks say why
  const int64_t phonemes = ids.shape()[1];
  for (int64_t b = 0; b < lengths.numel(); ++b) {
    int64_t n = lengths.element_as_int(b);
    if (n < 1 || n > phonemes)
      throw Error(ErrorCode::InvalidArgument, "input 'input_lengths'[" + std::to_string(b) + "] is " +
                                                  std::to_string(n) + ", outside [1, " + std::to_string(phonemes) +
                                                  "] (the phoneme count of input 'input')");
  }
  const char* names[3] = {"noise_scale", "length_scale", "noise_w"};
  for (int64_t i = 0; i < 3; ++i) {
    double v = scales.element_as_double(i);
    bool ok = std::isfinite(v) && (i == 1 ? v > 0 : v >= 0);
    if (!ok)
      throw Error(ErrorCode::InvalidArgument, "input 'scales'[" + std::to_string(i) + "] (" + names[i] + ") is " +
                                                  number(v) + "; it must be finite and " +
                                                  (i == 1 ? "> 0" : ">= 0"));
  }
  if (int sid = input_index(graph, "sid"); sid >= 0) {
    const Tensor& s = inputs.at(static_cast<size_t>(sid));
    for (int64_t b = 0; b < s.numel(); ++b)
      if (s.element_as_int(b) < 0)
        throw Error(ErrorCode::InvalidArgument, "input 'sid'[" + std::to_string(b) + "] is " +
                                                    std::to_string(s.element_as_int(b)) + ", a negative speaker id");
  }
}

std::vector<Tensor> shorter_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  const int in = input_index(graph, "input"), len = input_index(graph, "input_lengths");
  if (!is_piper_voice(graph)) return {};
  const Tensor& ids = inputs.at(static_cast<size_t>(in));
  if (ids.rank() != 2 || ids.shape()[0] != 1 || ids.shape()[1] < 4) return {};
  const int64_t n = ids.shape()[1], keep = n / 2;
  std::vector<int64_t> shorter(static_cast<size_t>(keep + 1));
  for (int64_t i = 0; i < keep; ++i) shorter[static_cast<size_t>(i)] = ids.element_as_int(i);
  shorter[static_cast<size_t>(keep)] = ids.element_as_int(n - 1);
  std::vector<Tensor> out = inputs;
  out[static_cast<size_t>(in)] = Tensor::from_vector<int64_t>({1, keep + 1}, shorter);
  out[static_cast<size_t>(len)] = Tensor::from_vector<int64_t>({1}, {keep + 1});
  return out;
}

namespace {

// The node looking a speaker up: Gather(constant [speakers, channels], sid), axis 0.
int speaker_lookup(const ir::Graph& g) {
  const int sid = input_index(g, "sid");
  if (sid < 0) return -1;
  const ir::ValueId sid_value = g.inputs[static_cast<size_t>(sid)];
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (node.op == ir::Op::Gather && node.inputs.size() == 2 && node.inputs[1] == sid_value &&
        g.is_constant(node.inputs[0]) && g.value(node.inputs[0]).constant.rank() == 2 &&
        node.attrs.get_int("axis", 0) == 0)
      return static_cast<int>(n);
  }
  return -1;
}

}  // namespace

Tensor speaker_embeddings(const Model& voice) {
  const ir::Graph& g = voice.graph();
  const int n = speaker_lookup(g);
  return n < 0 ? Tensor{} : g.value(g.nodes[static_cast<size_t>(n)].inputs[0]).constant;
}

Model with_speaker_embedding_input(const Model& voice) {
  ir::Graph g = voice.graph();
  const int n = speaker_lookup(g);
  if (n < 0)
    throw Error(ErrorCode::InvalidArgument,
                "speaker embedding: the voice has no speaker lookup (a Gather of a [speakers, channels] constant by "
                "input 'sid')");
  const ir::Node lookup = g.nodes[static_cast<size_t>(n)];
  const ir::ValueId sid = lookup.inputs[1], embedding = lookup.outputs[0];
  const Tensor& table = g.value(lookup.inputs[0]).constant;
  ir::Value& v = g.value(embedding);
  v.name = "speaker_embedding";
  v.dtype = table.dtype();
  v.shape = {g.value(sid).shape.empty() ? -1 : g.value(sid).shape[0], table.shape()[1]};
  v.dim_params = {g.value(sid).dim_params.empty() ? "" : g.value(sid).dim_params[0], ""};
  g.nodes.erase(g.nodes.begin() + n);
  bool sid_read = false;  // elsewhere than the lookup: then it stays an input
  for (const ir::Node& node : g.nodes)
    for (ir::ValueId in : node.inputs) sid_read = sid_read || in == sid;
  for (ir::ValueId out : g.outputs) sid_read = sid_read || out == sid;
  for (ir::ValueId& in : g.inputs)
    if (in == sid) in = embedding;
  if (sid_read) g.inputs.push_back(sid);
  return Model::from_graph(std::move(g));
}

}  // namespace lockstep::voices
