#include "ir/verify.h"

#include <string>
#include <vector>

namespace lockstep::ir {

namespace {

constexpr int64_t kPlanAlignment = 64;

std::string value_label(const Graph& graph, ValueId id) {
  return "%" + std::to_string(id) + " '" + graph.value(id).name + "'";
}

[[noreturn]] void fail(ErrorCode code, const std::string& message, const Node* node = nullptr) {
  if (node) throw Error(code, "IR verifier: " + message, node->name, op_name(node->op));
  throw Error(code, "IR verifier: " + message);
}

class Verifier {
 public:
  explicit Verifier(const Graph& graph)
      : graph_(graph), defined_(graph.values.size(), false), producer_(graph.values.size(), -1) {}

  void run() {
    check_graph_inputs();
    for (size_t n = 0; n < graph_.nodes.size(); ++n) check_node(static_cast<int>(n));
    check_graph_outputs();
    if (graph_.plan) check_plan(*graph_.plan);
  }

 private:
  bool in_range(ValueId id) const { return id >= 0 && static_cast<size_t>(id) < graph_.values.size(); }

  void check_graph_inputs() {
    for (ValueId id : graph_.inputs) {
      if (!in_range(id)) fail(ErrorCode::InvalidModel, "graph input id " + std::to_string(id) + " out of range");
      if (graph_.is_constant(id))
        fail(ErrorCode::InvalidModel, "graph input " + value_label(graph_, id) + " is a constant");
      if (defined_[id]) fail(ErrorCode::InvalidModel, "graph input " + value_label(graph_, id) + " listed twice");
      defined_[id] = true;
    }
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (graph_.values[v].constant.defined()) defined_[v] = true;
  }

  // A read of `id` by node `n`: the value must exist and be defined by now.
  void check_use(int n, ValueId id, const char* what) {
    const Node& node = graph_.nodes[n];
    if (!in_range(id))
      fail(ErrorCode::InvalidModel, std::string(what) + " id " + std::to_string(id) + " out of range", &node);
    if (!defined_[id]) {
      std::string why = producer_[id] < 0 && !later_producer(id, n)
                            ? " is never produced"
                            : " is produced later (graph not in topological order, or cyclic)";
      fail(ErrorCode::InvalidModel, std::string(what) + " " + value_label(graph_, id) + why, &node);
    }
  }

  bool later_producer(ValueId id, int n) const {
    for (size_t m = static_cast<size_t>(n); m < graph_.nodes.size(); ++m)
      for (ValueId out : graph_.nodes[m].outputs)
        if (out == id) return true;
    return false;
  }

  void check_node(int n) {
    const Node& node = graph_.nodes[n];
    for (ValueId id : node.inputs)
      if (id != kNoValue) check_use(n, id, "input");
    for (const EpilogueStep& step : node.epilogue) check_step(n, step);
    if (!node.epilogue.empty() && node.outputs.size() != 1)
      fail(ErrorCode::Internal, "a node with an epilogue must have exactly one output", &node);
    if (node.outputs.empty()) fail(ErrorCode::InvalidModel, "node has no outputs", &node);
    for (ValueId id : node.outputs) {
      if (id == kNoValue) continue;
      if (!in_range(id)) fail(ErrorCode::InvalidModel, "output id " + std::to_string(id) + " out of range", &node);
      if (graph_.is_constant(id))
        fail(ErrorCode::InvalidModel, "output " + value_label(graph_, id) + " is a constant", &node);
      if (defined_[id]) {
        std::string other = producer_[id] >= 0 ? "node '" + graph_.nodes[producer_[id]].name + "'" : "a graph input";
        fail(ErrorCode::InvalidModel, "output " + value_label(graph_, id) + " is also produced by " + other, &node);
      }
      defined_[id] = true;
      producer_[id] = n;
    }
  }

  void check_step(int n, const EpilogueStep& step) {
    const Node& node = graph_.nodes[n];
    bool binary = is_binary_elementwise(step.op);
    if (!binary && !is_unary_elementwise(step.op))
      fail(ErrorCode::Internal, std::string("epilogue step ") + op_name(step.op) + " is not elementwise", &node);
    if (!binary) {
      if (step.operand != kNoValue)
        fail(ErrorCode::Internal, std::string("unary epilogue step ") + op_name(step.op) + " has an operand", &node);
      return;
    }
    if (step.operand == kNoValue)
      fail(ErrorCode::Internal, std::string("binary epilogue step ") + op_name(step.op) + " has no operand", &node);
    check_use(n, step.operand, "epilogue operand");
    if (node.outputs.empty() || !in_range(node.outputs[0])) return;  // reported by check_node
    const Value& out = graph_.value(node.outputs[0]);
    const Value& operand = graph_.value(step.operand);
    if (out.shape_known() && operand.shape_known() && !broadcasts_to(operand.shape, out.shape))
      fail(ErrorCode::Internal,
           "epilogue operand " + value_label(graph_, step.operand) + " " + shape_str(operand.shape) +
               " does not broadcast to the output shape " + shape_str(out.shape) + " (step '" + step.onnx_name + "')",
           &node);
  }

  void check_graph_outputs() {
    for (ValueId id : graph_.outputs) {
      if (!in_range(id)) fail(ErrorCode::InvalidModel, "graph output id " + std::to_string(id) + " out of range");
      // A graph input passed straight through is defined too.
      if (!defined_[id]) fail(ErrorCode::InvalidModel, "graph output " + value_label(graph_, id) + " is never produced");
    }
  }

  void check_plan(const MemoryPlan& plan) {
    size_t count = graph_.values.size();
    if (plan.offsets.size() != count || plan.sizes.size() != count)
      fail(ErrorCode::Internal, "memory plan covers " + std::to_string(plan.offsets.size()) + " values, graph has " +
                                    std::to_string(count));
    if (plan.lower_bound_bytes > plan.arena_bytes)
      fail(ErrorCode::Internal, "memory plan arena is smaller than its own lower bound");
    for (size_t v = 0; v < count; ++v) {
      ValueId id = static_cast<ValueId>(v);
      bool stored = !graph_.values[v].constant.defined() && defined_[v];
      int64_t offset = plan.offsets[v];
      if (!stored) {
        if (graph_.values[v].constant.defined() && offset != -1)
          fail(ErrorCode::Internal, "memory plan gives constant " + value_label(graph_, id) + " an arena offset");
        continue;
      }
      if (offset < 0) fail(ErrorCode::Internal, "memory plan has no offset for " + value_label(graph_, id));
      if (offset % kPlanAlignment != 0)
        fail(ErrorCode::Internal, "memory plan offset of " + value_label(graph_, id) + " is not 64-byte aligned");
      if (plan.sizes[v] < 0 || offset + plan.sizes[v] > plan.arena_bytes)
        fail(ErrorCode::Internal, "memory plan puts " + value_label(graph_, id) + " outside the arena");
    }
  }

  const Graph& graph_;
  std::vector<bool> defined_;
  std::vector<int> producer_;
};

}  // namespace

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

void verify(const Graph& graph) { Verifier(graph).run(); }

}  // namespace lockstep::ir
