#include "passes/fuse_epilogues.h"

#include <algorithm>

#include "ir/verify.h"
#include "passes/rewrite.h"

namespace lockstep::passes {

namespace {

constexpr float kLeakyReluDefaultAlpha = 0.01f;  // ONNX's default

bool is_fusable_step(ir::Op op) {
  switch (op) {
    case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Pow:
    case ir::Op::Tanh: case ir::Op::Sigmoid: case ir::Op::Relu: case ir::Op::LeakyRelu:
    case ir::Op::Exp: case ir::Op::Neg: case ir::Op::Sqrt:
    case ir::Op::Erf: case ir::Op::Softplus: case ir::Op::Abs: case ir::Op::Reciprocal:
      return true;
    // Ceil and Floor are decisions (a duration's frame count): kept as kernels of their own so that
    // the tools see their inputs and outputs on every backend (diff/discrete.h).
    default:
      return false;
  }
}

bool is_fusable_producer(const ir::Node& node) {
  if (node.outputs.size() != 1) return false;
  switch (node.op) {
    case ir::Op::Conv: case ir::Op::ConvTranspose: case ir::Op::MatMul: case ir::Op::Gemm:
      return true;
    default:
      return is_fusable_step(node.op);
  }
}

class Fuser {
 public:
  Fuser(ir::Graph& graph, PassContext& ctx) : graph_(graph), ctx_(ctx) {}

  void run() {
    index_graph();
    erase_.assign(graph_.nodes.size(), false);
    for (size_t p = 0; p < graph_.nodes.size(); ++p) {
      if (erase_[p] || !is_fusable_producer(graph_.nodes[p])) continue;
      // Grow the chain while the producer's single reader qualifies.
      while (try_fuse_reader(static_cast<int>(p))) {
      }
    }
    erase_nodes(graph_, erase_);
  }

 private:
  void index_graph() {
    producer_ = graph_.producers();
    consumers_ = graph_.consumers();
  }

  bool observed(const std::string& onnx_name) const {
    const auto& names = ctx_.options().observe;
    return std::find(names.begin(), names.end(), onnx_name) != names.end();
  }

  // An operand is ready when the producer runs: a constant, a graph input, or made earlier.
  bool ready_before(ir::ValueId operand, int producer) const {
    int made_by = producer_[operand];
    return made_by < 0 || made_by < producer;
  }

  bool try_fuse_reader(int p) {
    ir::Node& producer = graph_.nodes[p];
    ir::ValueId acc = producer.outputs[0];
    if (acc == ir::kNoValue || is_graph_output(graph_, acc) || consumers_[acc].size() != 1) return false;
    if (observed(producer.result_onnx_name())) return false;  // its value must stay a kernel boundary
    int c = consumers_[acc][0];
    const ir::Node& reader = graph_.nodes[c];
    if (!is_fusable_step(reader.op) || reader.outputs.size() != 1 || !reader.epilogue.empty()) return false;
    const ir::Value& in = graph_.value(acc);
    const ir::Value& out = graph_.value(reader.outputs[0]);
    if (!is_floating(in.dtype) || out.dtype != in.dtype || !in.shape_known() || out.shape != in.shape) return false;

    ir::EpilogueStep step;
    step.op = reader.op;
    step.onnx_name = reader.name;
    if (ir::is_binary_elementwise(reader.op)) {
      if (reader.inputs.size() != 2) return false;
      bool acc_is_lhs = reader.inputs[0] == acc;
      ir::ValueId operand = acc_is_lhs ? reader.inputs[1] : reader.inputs[0];
      if (operand == ir::kNoValue || operand == acc || (!acc_is_lhs && reader.inputs[1] != acc)) return false;
      const ir::Value& other = graph_.value(operand);
      if (!is_floating(other.dtype) || !other.shape_known() || !ir::broadcasts_to(other.shape, in.shape)) return false;
      if (!ready_before(operand, p)) return false;
      step.operand = operand;
      step.operand_is_lhs = !acc_is_lhs;
    } else {
      if (reader.inputs.size() != 1 || reader.inputs[0] != acc) return false;
      if (reader.op == ir::Op::LeakyRelu) step.alpha = reader.attrs.get_float("alpha", kLeakyReluDefaultAlpha);
    }
    if (!ctx_.should_apply("fuse_epilogues", std::string("fuse ") + ir::op_name(reader.op) + " '" + reader.name +
                                                 "' into " + ir::op_name(producer.op) + " '" + producer.name + "'"))
      return false;

    ir::ValueId result = reader.outputs[0];
    producer.epilogue.push_back(step);
    producer.outputs[0] = result;
    producer_[result] = p;
    producer_[acc] = -1;
    consumers_[acc].clear();
    // The operand's reader moves from c to p; its list stays a superset, which is all we read.
    if (step.operand != ir::kNoValue) consumers_[step.operand].push_back(p);
    erase_[c] = true;
    return true;
  }

  ir::Graph& graph_;
  PassContext& ctx_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> erase_;
};

}  // namespace

void fuse_epilogues(ir::Graph& graph, PassContext& ctx) { Fuser(graph, ctx).run(); }

}  // namespace lockstep::passes
