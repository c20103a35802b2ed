#include "zoo/seed_flow.h"

#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include "onnx/export.h"
#include "zoo/random.h"

namespace lockstep::zoo {
namespace {

using ir::Op;
using ir::ValueId;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Appends nodes and values with the names torch.onnx.export gives (scope/Op_N, scope/Constant_N_output_0).
class FlowBuilder {
 public:
  FlowBuilder(uint64_t seed, int64_t frames) : seed_(seed), frames_(frames) {}

  ir::Graph graph;

  ValueId input(const std::string& name, Shape shape) {
    ValueId v = graph.add_value({name, DType::Float32, std::move(shape), {}, {}});
    graph.inputs.push_back(v);
    return v;
  }
  ValueId constant(const std::string& name, Tensor tensor) {
    Shape shape = tensor.shape();
    DType dtype = tensor.dtype();
    return graph.add_value({name, dtype, shape, {}, std::move(tensor)});
  }
  // A parameter of N(0, std) drawn from a stream keyed by (seed, name): order-independent.
  ValueId weight(const std::string& name, Shape shape) {
    Tensor t(DType::Float32, std::move(shape));
    NormalGenerator gen(seed_ ^ fnv1a64(name));
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(gen.next_normal() * kSeedFlowWeightStd);
    return constant(name, std::move(t));
  }
  // The scope's next "Constant" name, numbered as the exporter numbers them.
  ValueId scope_constant(const std::string& scope, int64_t value) {
    int n = constant_count_[scope]++;
    std::string name = scope + "/Constant" + (n ? "_" + std::to_string(n) : "") + "_output_0";
    return constant(name, Tensor::from_vector<int64_t>({1}, {value}));
  }
  // The scope's next node name for `op`: Op, Op_1, Op_2, ...
  std::string next_name(const std::string& scope, const std::string& op) {
    int n = op_count_[scope + "/" + op]++;
    return scope + "/" + op + (n ? "_" + std::to_string(n) : "");
  }

  std::vector<ValueId> node(Op op, const std::string& name, std::vector<ValueId> inputs, std::vector<Shape> shapes,
                            ir::Attributes attrs = {}) {
    ir::Node n{op, name, std::move(inputs), {}, std::move(attrs), {}};
    for (size_t i = 0; i < shapes.size(); ++i)
      n.outputs.push_back(
          graph.add_value({name + "_output_" + std::to_string(i), DType::Float32, shapes[i], {}, {}}));
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back().outputs;
  }
  ValueId unary(Op op, const std::string& scope, ValueId x) {
    return node(op, next_name(scope, ir::op_name(op)), {x}, {shape(x)})[0];
  }
  ValueId binary(Op op, const std::string& scope, ValueId a, ValueId b) {
    return node(op, next_name(scope, ir::op_name(op)), {a, b}, {shape(a)})[0];
  }
  // x[:, begin:end] along channels (end = INT64_MAX for "to the end"); step -1 reverses (Flip).
  ValueId slice_channels(const std::string& scope, ValueId x, int64_t begin, int64_t end, int64_t step) {
    ValueId axes = scope_constant(scope, 1);
    ValueId starts = scope_constant(scope, begin);
    ValueId ends = scope_constant(scope, end);
    ValueId steps = scope_constant(scope, step);
    Shape s = shape(x);
    if (step > 0) s[1] = std::min(end, s[1]) - begin;
    return node(Op::Slice, next_name(scope, "Slice"), {x, starts, ends, axes, steps}, {s})[0];
  }
  ValueId conv(const std::string& module, ValueId x, int64_t out_channels, int64_t kernel) {
    std::string param = module;  // "flow.6/enc/in_layers.0" -> "flow.6.enc.in_layers.0"
    for (char& c : param)
      if (c == '/') c = '.';
    int64_t in_channels = shape(x)[1];
    ValueId w = weight(param + ".weight", {out_channels, in_channels, kernel});
    ValueId b = weight(param + ".bias", {out_channels});
    ir::Attributes attrs;
    attrs.set("dilations", std::vector<int64_t>{1});
    attrs.set("group", int64_t{1});
    attrs.set("kernel_shape", std::vector<int64_t>{kernel});
    attrs.set("pads", std::vector<int64_t>{(kernel - 1) / 2, (kernel - 1) / 2});
    attrs.set("strides", std::vector<int64_t>{1});
    return node(Op::Conv, module + "/Conv", {x, w, b}, {{1, out_channels, frames_}}, std::move(attrs))[0];
  }
  const Shape& shape(ValueId v) const { return graph.value(v).shape; }

 private:
  uint64_t seed_;
  int64_t frames_;
  std::map<std::string, int> constant_count_, op_count_;
};

// WaveNet encoder (VITS WN, mean-only coupling), zero Adds folded away.
ValueId wavenet(FlowBuilder& b, const std::string& scope, ValueId x, ValueId mask) {
  const std::string enc = scope + "/enc";
  const int64_t h = kSeedFlowHidden;
  ValueId out = ir::kNoValue;
  for (int64_t i = 0; i < kSeedFlowLayers; ++i) {
    std::string layer = std::to_string(i);
    ValueId a = b.conv(enc + "/in_layers." + layer, x, 2 * h, kSeedFlowKernel);
    ValueId t = b.unary(Op::Tanh, enc, b.slice_channels(enc, a, 0, h, 1));
    ValueId s = b.unary(Op::Sigmoid, enc, b.slice_channels(enc, a, h, kInt64Max, 1));
    ValueId acts = b.binary(Op::Mul, enc, t, s);
    bool last = i == kSeedFlowLayers - 1;
    ValueId rs = b.conv(enc + "/res_skip_layers." + layer, acts, last ? h : 2 * h, 1);
    if (!last) {
      ValueId res = b.slice_channels(enc, rs, 0, h, 1);
      x = b.binary(Op::Mul, enc, b.binary(Op::Add, enc, x, res), mask);
      ValueId skip = b.slice_channels(enc, rs, h, kInt64Max, 1);
      out = out == ir::kNoValue ? skip : b.binary(Op::Add, enc, out, skip);
    } else {
      out = b.binary(Op::Add, enc, out, rs);
    }
  }
  return b.binary(Op::Mul, enc, out, mask);
}

ValueId coupling(FlowBuilder& b, const std::string& scope, ValueId x, ValueId mask, ValueId split_sizes) {
  const int64_t half = kSeedFlowChannels / 2;
  Shape half_shape = b.shape(x);
  half_shape[1] = half;
  ir::Attributes split_attrs;
  split_attrs.set("axis", int64_t{1});
  auto parts = b.node(Op::Split, scope + "/Split", {x, split_sizes}, {half_shape, half_shape}, split_attrs);
  ValueId hidden = b.binary(Op::Mul, scope, b.conv(scope + "/pre", parts[0], kSeedFlowHidden, 1), mask);
  hidden = wavenet(b, scope, hidden, mask);
  ValueId m = b.binary(Op::Mul, scope, b.conv(scope + "/post", hidden, half, 1), mask);
  ValueId x1 = b.binary(Op::Mul, scope, b.binary(Op::Sub, scope, parts[1], m), mask);
  ir::Attributes concat_attrs;
  concat_attrs.set("axis", int64_t{1});
  return b.node(Op::Concat, scope + "/Concat", {parts[0], x1}, {b.shape(x)}, concat_attrs)[0];
}

// Keeps only `keep`'s ancestors (and the graph inputs), renumbering values; `keep`'s output
// becomes the graph output.
ir::Graph keep_ancestors(const ir::Graph& g, int keep) {
  std::vector<bool> node_live(g.nodes.size(), false), value_live(g.values.size(), false);
  auto producers = g.producers();
  node_live[keep] = true;
  for (int n = keep; n >= 0; --n) {
    if (!node_live[n]) continue;
    for (ValueId v : g.nodes[n].inputs) {
      value_live[v] = true;
      if (producers[v] >= 0) node_live[producers[v]] = true;
    }
    for (ValueId v : g.nodes[n].outputs) value_live[v] = true;
  }
  for (ValueId v : g.inputs) value_live[v] = true;
  ir::Graph out;
  out.name = g.name;
  out.opset = g.opset;
  std::vector<ValueId> remap(g.values.size(), ir::kNoValue);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (value_live[v]) remap[v] = out.add_value(g.values[v]);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!node_live[n]) continue;
    ir::Node node = g.nodes[n];
    for (ValueId& v : node.inputs) v = remap[v];
    for (ValueId& v : node.outputs) v = remap[v];
    out.nodes.push_back(std::move(node));
  }
  for (ValueId v : g.inputs) out.inputs.push_back(remap[v]);
  out.outputs.push_back(remap[g.nodes[keep].outputs[0]]);
  return out;
}

}  // namespace

ir::Graph seed_flow_graph(uint64_t seed, int64_t frames) {
  if (frames <= 0) throw Error(ErrorCode::InvalidArgument, "seed_flow_graph: frames must be positive");
  FlowBuilder b(seed, frames);
  b.graph.name = "seed_flow_174";
  b.graph.opset = 17;
  ValueId x = b.input("z_p", {1, kSeedFlowChannels, frames});
  ValueId mask = b.input("y_mask", {1, 1, frames});
  ValueId split_sizes = b.constant("split_sizes", Tensor::from_vector<int64_t>({2}, {64, 64}));
  // flows = [coupling 0, flip 1, ..., coupling 6, flip 7], run in reverse as at inference.
  for (int k = 7; k >= 0; --k) {
    std::string scope = "flow." + std::to_string(k);
    if (k % 2 == 1) x = b.slice_channels(scope, x, -1, -kInt64Max, -1);
    else x = coupling(b, scope, x, mask, split_sizes);
  }
  int cut = b.graph.find_node(kSeedFlowCut);
  if (cut < 0) throw Error(ErrorCode::Internal, "seed_flow_graph: cut node missing");
  return keep_ancestors(b.graph, cut);
}

std::vector<Tensor> seed_flow_inputs(int64_t frames) {
  Tensor z(DType::Float32, {1, kSeedFlowChannels, frames});
  float* p = z.data<float>();
  for (int64_t c = 0; c < kSeedFlowChannels; ++c)
    for (int64_t t = 0; t < frames; ++t)
      p[c * frames + t] = static_cast<float>(0.5 * std::sin(2.0 * std::numbers::pi * static_cast<double>(3 * c + t) / 128.0));
  Tensor mask(DType::Float32, {1, 1, frames});
  for (int64_t t = 0; t < frames; ++t) mask.data<float>()[t] = 1.0f;
  return {z, mask};
}

std::vector<int> seed_flow_anchors() { return {49, 102, 155, 162, 164, 170, 171, 172, 173, 174}; }

void write_seed_flow_onnx(const std::string& path, uint64_t seed) { onnx::export_model(seed_flow_graph(seed), path); }

}  // namespace lockstep::zoo
