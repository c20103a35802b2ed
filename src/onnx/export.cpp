// ir::Graph -> ONNX ModelProto. The IR holds the newest form of every op, so the file uses
// opset >= 13 (raised where a node needs a newer form), epilogues become separate ONNX nodes
// named by their onnx_name, and constants become raw_data initializers.
#include "onnx/export.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/atomic_file.h"
#include "onnx/onnx.pb.h"
#include "onnx/proto_tensor.h"

namespace lockstep::onnx {

namespace {

using ir::Op;

constexpr int64_t kDefaultExportOpset = 17;
constexpr int64_t kIrVersion = 8;

bool has_input(const ir::Node& n, size_t i) { return n.inputs.size() > i && n.inputs[i] != ir::kNoValue; }

// Split without sizes: even parts need no attribute before opset 18; uneven ones need 18.
bool split_is_even(const ir::Graph& g, const ir::Node& n) {
  const Shape& shape = g.value(n.inputs.at(0)).shape;
  auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = n.attrs.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || shape[static_cast<size_t>(axis)] < 0) return false;
  auto parts = static_cast<int64_t>(n.outputs.size());
  return parts > 0 && shape[static_cast<size_t>(axis)] % parts == 0;
}

// The oldest opset whose form of `n` matches the IR's.
int64_t required_opset(const ir::Graph& g, const ir::Node& n) {
  switch (n.op) {
    case Op::Pad: return has_input(n, 3) ? 18 : 13;
    case Op::Split: return has_input(n, 1) || split_is_even(g, n) ? 13 : 18;
    case Op::Shape: return n.attrs.has("start") || n.attrs.has("end") ? 15 : 13;
    case Op::Reshape: return n.attrs.get_int("allowzero", 0) != 0 ? 14 : 13;
    // Reductions: axes as an input from 18 on (ReduceSum: 13)
    case Op::ReduceMean: case Op::ReduceMax: case Op::ReduceMin:
      return has_input(n, 1) || n.attrs.has("noop_with_empty_axes") ? 18 : 13;
    case Op::ScatterND: {
      std::string r = n.attrs.get_string("reduction", "none");
      return r == "max" || r == "min" ? 18 : n.attrs.has("reduction") ? 16 : 13;
    }
    default: return 13;
  }
}

void set_attribute(::onnx::AttributeProto* a, const std::string& name, const ir::Attribute& value) {
  a->set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a->set_type(::onnx::AttributeProto::INT);
          a->set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a->set_type(::onnx::AttributeProto::FLOAT);
          a->set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a->set_type(::onnx::AttributeProto::STRING);
          a->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a->set_type(::onnx::AttributeProto::INTS);
          for (int64_t x : v) a->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a->set_type(::onnx::AttributeProto::FLOATS);
          for (float x : v) a->add_floats(x);
        } else {
          a->set_type(::onnx::AttributeProto::TENSOR);
          tensor_to_proto(v, a->mutable_t());
        }
      },
      value);
}

void set_value_info(::onnx::ValueInfoProto* info, const ir::Value& v, bool with_shape) {
  info->set_name(v.name);
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(v.dtype));
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (v.shape[i] >= 0) dim->set_dim_value(v.shape[i]);
    else if (i < v.dim_params.size() && !v.dim_params[i].empty()) dim->set_dim_param(v.dim_params[i]);
  }
}

class Exporter {
 public:
  explicit Exporter(const ir::Graph& g) : g_(g) {
    for (const auto& v : g.values) taken_.insert(v.name);
  }

  ::onnx::ModelProto run() {
    int64_t opset = g_.opset >= 13 && g_.opset <= 18 ? g_.opset : kDefaultExportOpset;
    for (const auto& n : g_.nodes) opset = std::max(opset, required_opset(g_, n));
    opset_ = opset;
    ::onnx::ModelProto model;
    model.set_ir_version(kIrVersion);
    model.set_producer_name("lockstep");
    auto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    graph_ = model.mutable_graph();
    graph_->set_name(g_.name.empty() ? "lockstep" : g_.name);
    for (ir::ValueId v : g_.inputs) set_value_info(graph_->add_input(), g_.value(v), true);
    for (const auto& n : g_.nodes) add_node(n);
    for (ir::ValueId v : g_.outputs) {
      use(v);
      const ir::Value& value = g_.value(v);
      // An empty shape may just mean "never inferred": leave it out rather than claim a scalar.
      set_value_info(graph_->add_output(), value, !value.shape.empty());
    }
    return model;
  }

 private:
  // The name of `v` in the file; a constant becomes an initializer the first time it is used.
  std::string use(ir::ValueId v) {
    if (v == ir::kNoValue) return "";
    const ir::Value& value = g_.value(v);
    if (value.constant.defined() && emitted_.insert(v).second) {
      // Folded constants may come back as float64 from the reference; store the value's dtype.
      Tensor t = value.constant.dtype() == value.dtype ? value.constant : value.constant.to(value.dtype);
      auto* init = graph_->add_initializer();
      tensor_to_proto(t, init);
      init->set_name(value.name);
    }
    return value.name;
  }

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  void add_node(const ir::Node& n) {
    auto* p = graph_->add_node();
    p->set_name(n.name);
    p->set_op_type(ir::op_name(n.op));
    for (ir::ValueId v : n.inputs) p->add_input(use(v));
    for (const auto& [name, value] : n.attrs.all()) {
      if (n.op == Op::Split && name == "num_outputs" && opset_ < 18) continue;  // implied by the outputs
      set_attribute(p->add_attribute(), name, value);
    }
    if (n.op == Op::Split && opset_ >= 18 && !has_input(n, 1) && !n.attrs.has("num_outputs"))
      set_attribute(p->add_attribute(), "num_outputs", static_cast<int64_t>(n.outputs.size()));
    for (ir::ValueId v : n.outputs) p->add_output(v == ir::kNoValue ? "" : g_.value(v).name);
    if (n.epilogue.empty()) return;

    // outputs[0] is the value after the whole epilogue; invent names for the steps between.
    std::string acc = fresh_name(n.name + "/output");
    p->set_output(0, acc);
    for (size_t i = 0; i < n.epilogue.size(); ++i) {
      const ir::EpilogueStep& step = n.epilogue[i];
      bool last = i + 1 == n.epilogue.size();
      std::string out = last ? g_.value(n.outputs[0]).name : fresh_name(step.onnx_name + "/output");
      auto* s = graph_->add_node();
      s->set_name(step.onnx_name);
      s->set_op_type(ir::op_name(step.op));
      if (step.operand == ir::kNoValue) {
        s->add_input(acc);
      } else {
        std::string operand = use(step.operand);
        s->add_input(step.operand_is_lhs ? operand : acc);
        s->add_input(step.operand_is_lhs ? acc : operand);
      }
      if (step.op == Op::LeakyRelu) set_attribute(s->add_attribute(), "alpha", step.alpha);
      s->add_output(out);
      acc = out;
    }
  }

  const ir::Graph& g_;
  int64_t opset_ = kDefaultExportOpset;
  ::onnx::GraphProto* graph_ = nullptr;
  std::unordered_set<std::string> taken_;
  std::set<ir::ValueId> emitted_;
};

}  // namespace

std::string serialize_model(const ir::Graph& graph) {
  ::onnx::ModelProto model = Exporter(graph).run();
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error(ErrorCode::LimitExceeded, "the model cannot be serialized (protobuf limit of 2 GiB?)");
  return bytes;
}

void export_model(const ir::Graph& graph, const std::string& path) { write_file_atomic(path, serialize_model(graph)); }

}  // namespace lockstep::onnx
