// Graph assembly: opsets, initializers, inputs, Constant nodes, node names, structural checks
// (dangling names, values produced twice, cycles) and a topological sort.
#include "onnx/import.h"

#include <climits>
#include <filesystem>
#include <functional>
#include <queue>
#include <unordered_set>

#include "core/atomic_file.h"
#include "core/limits.h"
#include "onnx/external_data.h"
#include "onnx/import_context.h"
#include "onnx/proto_tensor.h"

namespace lockstep::onnx {

namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 18;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

int64_t default_opset(const ::onnx::ModelProto& model) {
  std::optional<int64_t> opset;
  for (const auto& o : model.opset_import())
    if (is_default_domain(o.domain())) opset = o.version();
  if (!opset)
    throw Error(ErrorCode::UnsupportedOpset, "the model imports no default-domain (ai.onnx) opset; lockstep supports " +
                                                 std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  if (*opset < kMinOpset || *opset > kMaxOpset)
    throw Error(ErrorCode::UnsupportedOpset, "default-domain opset " + std::to_string(*opset) +
                                                 " is not supported; lockstep supports " + std::to_string(kMinOpset) +
                                                 " to " + std::to_string(kMaxOpset));
  return *opset;
}

// Empty names become "<OpType>_<index>", duplicates get a numeric suffix.
std::vector<std::string> unique_node_names(const ::onnx::GraphProto& g) {
  std::unordered_set<std::string> taken;
  for (const auto& n : g.node())
    if (!n.name().empty()) taken.insert(n.name());
  std::unordered_set<std::string> used;
  std::vector<std::string> names;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    std::string base = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    std::string name = base;
    // An invented name must not collide with a name the model uses later either.
    for (int k = 1; used.count(name) || (n.name().empty() && taken.count(name)); ++k)
      name = base + "_" + std::to_string(k);
    used.insert(name);
    names.push_back(name);
  }
  return names;
}

// Orders node indices so that producers come first (lowest original index first among the
// ready ones, so a sorted model keeps its order). Throws on a cycle.
std::vector<int> topological_order(const ::onnx::GraphProto& g, const std::vector<bool>& skip,
                                   const std::unordered_map<std::string, int>& producer,
                                   const std::vector<std::string>& names) {
  const int n = g.node_size();
  std::vector<std::vector<int>> users(static_cast<size_t>(n));
  std::vector<int> pending(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    if (skip[static_cast<size_t>(i)]) continue;
    for (const auto& in : g.node(i).input()) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;
      users[static_cast<size_t>(it->second)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (!skip[static_cast<size_t>(i)] && pending[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
  }
  size_t wanted = 0;
  for (int i = 0; i < n; ++i) wanted += skip[static_cast<size_t>(i)] ? 0 : 1;
  if (order.size() == wanted) return order;
  // Walk unscheduled producers from any stuck node until a node repeats: it lies on a cycle.
  int at = -1;
  for (int i = 0; i < n && at < 0; ++i)
    if (!skip[static_cast<size_t>(i)] && pending[static_cast<size_t>(i)] > 0) at = i;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  while (!seen[static_cast<size_t>(at)]) {
    seen[static_cast<size_t>(at)] = true;
    for (const auto& in : g.node(at).input()) {
      auto it = producer.find(in);
      if (it != producer.end() && pending[static_cast<size_t>(it->second)] > 0) {
        at = it->second;
        break;
      }
    }
  }
  throw Error(ErrorCode::InvalidModel, "graph has a cycle through node '" + names[static_cast<size_t>(at)] + "'",
              names[static_cast<size_t>(at)], g.node(at).op_type());
}

ir::Graph import_graph(const ::onnx::ModelProto& model, const std::string& base_dir, int64_t model_bytes) {
  const int64_t opset = default_opset(model);
  const ::onnx::GraphProto& g = model.graph();
  limits::check_node_count(g.node_size(), "the graph");
  ir::Graph graph;
  graph.name = g.name();
  graph.opset = opset;
  ImportContext ctx{graph, opset, {}, {}, {}};
  for (const auto& vi : g.value_info()) ctx.value_info[vi.name()] = &vi;
  if (g.sparse_initializer_size() > 0)
    throw Error(ErrorCode::UnsupportedAttribute, "sparse initializer '" + g.sparse_initializer(0).values().name() +
                                                     "' is not supported");

  // Ops first: an unknown op is the most useful thing to report.
  const std::vector<std::string> names = unique_node_names(g);
  std::vector<bool> is_constant(static_cast<size_t>(g.node_size()), false);
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string& name = names[static_cast<size_t>(i)];
    const std::string where = " (opset " + std::to_string(opset) + ")";
    if (!is_default_domain(n.domain()))
      throw Error(ErrorCode::UnsupportedOpset,
                  "op domain '" + n.domain() + "' is not supported; lockstep implements only the default ai.onnx domain",
                  name, n.op_type());
    if (n.op_type() == "Constant") {
      is_constant[static_cast<size_t>(i)] = true;
      continue;
    }
    if (!ir::op_from_onnx(n.op_type()))
      throw Error(ErrorCode::UnsupportedOp, "op " + n.op_type() + " is not supported by lockstep" + where, name,
                  n.op_type());
  }

  auto produced_twice = [](const std::string& value, const std::string& by) {
    return Error(ErrorCode::InvalidModel, "value '" + value + "' is produced twice (again by " + by + ")");
  };
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) throw Error(ErrorCode::InvalidModel, "an initializer has no name");
    if (ctx.by_name.count(init.name())) throw produced_twice(init.name(), "an initializer");
    const std::string what = "initializer '" + init.name() + "'";
    Tensor t = has_external_data(init) ? tensor_from_proto(load_external_data(init, base_dir, what, model_bytes), what)
                                       : tensor_from_proto(init, what);
    ir::Value v;
    v.name = init.name();
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.constant = std::move(t);
    ctx.add(std::move(v), true);
  }
  // Inputs that are also initializers are constants (old exporters list weights as inputs).
  std::unordered_set<std::string> input_names;
  for (const auto& in : g.input()) {
    if (!input_names.insert(in.name()).second)
      throw Error(ErrorCode::InvalidModel, "graph input '" + in.name() + "' is listed twice");
    if (ctx.by_name.count(in.name())) continue;
    if (in.name().empty()) throw Error(ErrorCode::InvalidModel, "a graph input has no name");
    ValueType type = value_type_from_proto(in, "graph input '" + in.name() + "'");
    ir::Value v;
    v.name = in.name();
    v.dtype = type.dtype;
    v.shape = type.shape;
    v.dim_params = type.dim_params;
    graph.inputs.push_back(ctx.add(std::move(v), type.has_shape));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    if (!is_constant[static_cast<size_t>(i)]) continue;
    const auto& n = g.node(i);
    Tensor t = constant_node_value(n, names[static_cast<size_t>(i)], opset);
    if (ctx.by_name.count(n.output(0))) throw produced_twice(n.output(0), "Constant node '" + names[static_cast<size_t>(i)] + "'");
    ir::Value v;
    v.name = n.output(0);
    v.dtype = t.dtype();
    v.shape = t.shape();
    v.constant = std::move(t);
    ctx.add(std::move(v), true);
  }

  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i) {
    if (is_constant[static_cast<size_t>(i)]) continue;
    for (const auto& out : g.node(i).output()) {
      if (out.empty()) continue;
      if (ctx.by_name.count(out) || producer.count(out))
        throw produced_twice(out, "node '" + names[static_cast<size_t>(i)] + "'");
      producer[out] = i;
    }
  }
  for (int i = 0; i < g.node_size(); ++i) {
    if (is_constant[static_cast<size_t>(i)]) continue;
    for (const auto& in : g.node(i).input())
      if (!in.empty() && !ctx.by_name.count(in) && !producer.count(in))
        throw Error(ErrorCode::InvalidModel,
                    "input '" + in + "' is produced by no node, initializer or graph input", names[static_cast<size_t>(i)],
                    g.node(i).op_type());
  }

  for (int i : topological_order(g, is_constant, producer, names))
    import_node(g.node(i), names[static_cast<size_t>(i)], ctx);

  for (const auto& out : g.output()) {
    auto it = ctx.by_name.find(out.name());
    if (it == ctx.by_name.end())
      throw Error(ErrorCode::InvalidModel, "graph output '" + out.name() + "' is produced by no node, initializer or input");
    ir::Value& v = graph.value(it->second);
    if (out.has_type()) {
      ValueType type = value_type_from_proto(out, "graph output '" + out.name() + "'");
      if (!v.constant.defined() && !ctx.rank_known.count(it->second)) {
        v.dtype = type.dtype;
        v.shape = type.shape;
        v.dim_params = type.dim_params;
      }
    }
    graph.outputs.push_back(it->second);
  }
  if (graph.outputs.empty()) throw Error(ErrorCode::InvalidModel, "the graph has no outputs");
  return graph;
}

}  // namespace

ir::ValueId ImportContext::add(ir::Value value, bool rank_is_known) {
  std::string name = value.name;
  ir::ValueId id = graph.add_value(std::move(value));
  by_name[name] = id;
  if (rank_is_known) rank_known.insert(id);
  return id;
}

ir::ValueId ImportContext::add_constant(const std::string& base_name, Tensor tensor) {
  std::string name = base_name;
  for (int k = 1; by_name.count(name); ++k) name = base_name + "_" + std::to_string(k);
  ir::Value v;
  v.name = name;
  v.dtype = tensor.dtype();
  v.shape = tensor.shape();
  v.constant = std::move(tensor);
  return add(std::move(v), true);
}

namespace {

::onnx::ModelProto parse_model(std::string_view bytes) {
  limits::check_model_bytes(static_cast<int64_t>(bytes.size()), "the model");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw Error(ErrorCode::LimitExceeded, "model is larger than 2 GiB; protobuf cannot parse it");
  ::onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::InvalidModel, "not a valid ONNX model: the protobuf cannot be parsed (truncated or garbage bytes)");
  if (!model.has_graph()) throw Error(ErrorCode::InvalidModel, "the model has no graph");
  return model;
}

}  // namespace

ir::Graph import_model_bytes(std::string_view bytes, const std::string& base_dir) {
  ::onnx::ModelProto model = parse_model(bytes);
  return import_graph(model, base_dir, static_cast<int64_t>(bytes.size()));
}

ir::Graph import_model(const std::string& path) {
  // Check the size before reading, so a huge file is refused without being loaded.
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) limits::check_model_bytes(static_cast<int64_t>(size), "model file '" + path + "'");
  std::string bytes = read_file(path);
  std::string base = std::filesystem::path(path).parent_path().string();
  if (base.empty()) base = ".";
  try {
    ::onnx::ModelProto model = parse_model(bytes);
    const int64_t model_bytes = static_cast<int64_t>(bytes.size());
    std::string().swap(bytes);  // the file's bytes are in the proto now: not three copies at once
    return import_graph(model, base, model_bytes);
  } catch (const Error& e) {
    throw Error(e.code(), e.message() + " [in " + path + "]", e.node(), e.op());
  }
}

Tensor load_tensor_proto(const std::string& path, std::string* name) {
  std::string bytes = read_file(path);
  ::onnx::TensorProto proto;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::InvalidModel, "'" + path + "' is not a serialized TensorProto");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, "tensor '" + proto.name() + "' in " + path);
}

}  // namespace lockstep::onnx
