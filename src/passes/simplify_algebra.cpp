#include "passes/simplify_algebra.h"

#include <algorithm>
#include <optional>

#include "passes/rewrite.h"

namespace lockstep::passes {

namespace {

// wanted is 0 or 1, exact in every dtype: a typed scan (folded zero fills of a megabyte meet
// this test at every new length of a voice).
template <class T>
bool all_equal(const Tensor& t, double wanted) {
  const T want = static_cast<T>(wanted);
  return std::all_of(t.data<T>(), t.data<T>() + t.numel(), [want](T v) { return v == want; });
}

bool is_constant_all(const ir::Graph& graph, ir::ValueId id, double wanted) {
  if (!graph.is_constant(id)) return false;
  const Tensor& t = graph.value(id).constant;
  switch (t.dtype()) {
    case DType::Float32: return all_equal<float>(t, wanted);
    case DType::Float64: return all_equal<double>(t, wanted);
    case DType::Int64: return all_equal<int64_t>(t, wanted);
    case DType::Int32: return all_equal<int32_t>(t, wanted);
    case DType::Bool: return all_equal<bool>(t, wanted);
  }
  return false;
}

struct Candidate {
  ir::ValueId kept;
  const char* why;
};

// Which input the node passes through unchanged (values-wise), if any.
std::optional<Candidate> pass_through_input(const ir::Graph& graph, const ir::Node& node) {
  const auto& in = node.inputs;
  auto input = [&](size_t i) { return i < in.size() ? in[i] : ir::kNoValue; };
  switch (node.op) {
    case ir::Op::Add:
      if (is_constant_all(graph, input(1), 0.0)) return Candidate{input(0), "x + 0"};
      if (is_constant_all(graph, input(0), 0.0)) return Candidate{input(1), "0 + x"};
      return std::nullopt;
    case ir::Op::Sub:
      if (is_constant_all(graph, input(1), 0.0)) return Candidate{input(0), "x - 0"};
      return std::nullopt;
    case ir::Op::Mul:
      if (is_constant_all(graph, input(1), 1.0)) return Candidate{input(0), "x * 1"};
      if (is_constant_all(graph, input(0), 1.0)) return Candidate{input(1), "1 * x"};
      return std::nullopt;
    case ir::Op::Div:
      if (is_constant_all(graph, input(1), 1.0)) return Candidate{input(0), "x / 1"};
      return std::nullopt;
    case ir::Op::Identity:
      return Candidate{input(0), "identity"};
    case ir::Op::Slice: {
      // With unit steps, an unchanged shape means every element is kept in order.
      ir::ValueId steps = input(4);
      if (steps != ir::kNoValue && !is_constant_all(graph, steps, 1.0)) return std::nullopt;
      return Candidate{input(0), "slice of the full range"};
    }
    case ir::Op::Reshape:
      return Candidate{input(0), "reshape to the same shape"};
    default:
      return std::nullopt;
  }
}

bool same_type(const ir::Value& a, const ir::Value& b) {
  return a.dtype == b.dtype && a.shape_known() && b.shape_known() && a.shape == b.shape;
}

}  // namespace

void simplify_algebra(ir::Graph& graph, PassContext& ctx) {
  std::vector<bool> erase(graph.nodes.size(), false);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    if (node.outputs.size() != 1 || !node.epilogue.empty()) continue;
    auto candidate = pass_through_input(graph, node);
    if (!candidate || candidate->kept == ir::kNoValue) continue;
    ir::ValueId out = node.outputs[0];
    ir::ValueId kept = candidate->kept;
    if (!same_type(graph.value(out), graph.value(kept))) continue;  // broadcasting or a cast: keep
    bool renames = is_graph_output(graph, out);
    // The graph output keeps its name: the kept value takes it, which only works for a value
    // that has no name the user sees (not an input, output or initializer).
    if (renames && (graph.is_constant(kept) || is_graph_output(graph, kept) ||
                    std::find(graph.inputs.begin(), graph.inputs.end(), kept) != graph.inputs.end()))
      continue;
    if (!ctx.should_apply("simplify_algebra", std::string("drop ") + ir::op_name(node.op) + " '" + node.name +
                                                  "' (" + candidate->why + ")"))
      continue;
    if (renames) std::swap(graph.value(kept).name, graph.value(out).name);
    replace_uses(graph, out, kept);
    erase[n] = true;
  }
  erase_nodes(graph, erase);
}

}  // namespace lockstep::passes
