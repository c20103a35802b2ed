#include "dynamic/probe.h"

#include <algorithm>
#include <chrono>

#include "ir/infer.h"
#include "ir/infer_rules.h"
#include "passes/fold_support.h"
#include "reference/evaluate.h"

namespace lockstep::dynamic {

namespace {

// As passes::infer_shapes: only small values (shape arithmetic) are folded while probing.
constexpr int64_t kProbeFoldMaxBytes = int64_t{1} << 20;

std::string bytes_str(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GiB", static_cast<double>(bytes) / (1 << 30));
  return std::to_string(bytes) + " bytes (" + buf + ")";
}

// Checks a Runnable node's outputs against the cap before anything is allocated for them.
void check_output_bytes(const ir::Graph& graph, const ir::Node& node, int64_t cap) {
  if (cap <= 0) return;
  for (ir::ValueId v : node.outputs) {
    if (v == ir::kNoValue) continue;
    const ir::Value& value = graph.value(v);
    int64_t elements = num_elements(value.shape);  // throws LimitExceeded on int64 overflow
    int64_t bytes = elements > cap ? cap + 1 : elements * static_cast<int64_t>(dtype_size(value.dtype));
    if (bytes > cap)
      ir::fail(node, ErrorCode::LimitExceeded,
               "output '" + value.name + "' would be " + shape_str(value.shape) + " " + dtype_name(value.dtype) +
                   ", over " + bytes_str(cap) +
                   " (the run-time memory cap: --max-memory, Options::max_memory_bytes); an input value "
                   "(a scale, a length) asks for a size this large");
  }
}

}  // namespace

bool ProbeResult::any_blocked() const {
  for (NodeState s : states)
    if (s == NodeState::Blocked || s == NodeState::Host) return true;
  return false;
}


ProbeResult probe(ir::Graph& graph, std::vector<char> known, int64_t max_value_bytes, bool timed,
                  const std::vector<Prediction>* predictions, int64_t moved_max_bytes) {
  known.resize(graph.values.size(), 0);
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].constant.defined()) known[v] = 1;
  auto is_known = [&](ir::ValueId v) { return v == ir::kNoValue || known[static_cast<size_t>(v)]; };

  ProbeResult result;
  result.states.reserve(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const ir::Node& node = graph.nodes[n];
    bool ready = true;
    for (size_t i = 0; i < node.inputs.size() && ready; ++i) {
      ir::ValueId v = node.inputs[i];
      ready = is_known(v) && (v == ir::kNoValue || !ir::is_parameter_input(node.op, i) || graph.is_constant(v));
    }
    for (const auto& step : node.epilogue) ready = ready && is_known(step.operand);
    NodeState state = !ready ? NodeState::Blocked
                      : ir::has_data_dependent_shape(node.op) && !passes::all_inputs_constant(graph, node)
                          ? NodeState::Host
                          : NodeState::Runnable;
    const Prediction predicted = predictions ? predictions->at(n) : Prediction::None;
    const ir::Value* mask = predicted != Prediction::None ? &graph.value(node.inputs.at(0)) : nullptr;
    if (state == NodeState::Host && mask && mask->dtype == DType::Bool) {
      // What the node gives on the mask it was predicted to get (the reference computes it).
      const int64_t index_bytes = num_elements(mask->shape) * std::max<int64_t>(1, static_cast<int64_t>(mask->shape.size())) * 8;
      if (max_value_bytes <= 0 || index_bytes <= max_value_bytes) {  // else it waits for the host, as before
        std::vector<Tensor> out =
            reference::evaluate_node(graph, node, {predicted_mask(predicted, mask->dtype, mask->shape)});
        for (size_t o = 0; o < out.size() && o < node.outputs.size(); ++o) {
          if (node.outputs[o] == ir::kNoValue) continue;
          ir::Value& value = graph.value(node.outputs[o]);
          value.dtype = out[o].dtype();
          value.shape = out[o].shape();
          value.constant = std::move(out[o]);
          known[static_cast<size_t>(node.outputs[o])] = 1;
        }
        state = NodeState::Predicted;
      }
    }
    if (state == NodeState::Runnable) {
      const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      std::vector<ir::ValueType> types = ir::infer_node(graph, node);
      for (size_t o = 0; o < types.size() && o < node.outputs.size(); ++o) {
        if (node.outputs[o] == ir::kNoValue) continue;
        ir::Value& value = graph.value(node.outputs[o]);
        value.dtype = types[o].dtype;
        value.shape = types[o].shape;
      }
      check_output_bytes(graph, node, max_value_bytes);
      if (node.op == ir::Op::Shape && node.epilogue.empty()) {
        const Shape& x = graph.value(node.inputs.at(0)).shape;  // only the input's shape is read
        auto [start, end] = ir::shape_range(node, static_cast<int64_t>(x.size()));
        graph.value(node.outputs.at(0)).constant =
            Tensor::from_vector<int64_t>({end - start}, std::vector<int64_t>(x.begin() + start, x.begin() + end));
        state = NodeState::Folded;
      } else if (passes::foldable(graph, node, kProbeFoldMaxBytes, moved_max_bytes)) {
        passes::fold_node(graph, node);
        state = NodeState::Folded;
      }
      for (ir::ValueId v : node.outputs)
        if (v != ir::kNoValue) known[static_cast<size_t>(v)] = 1;
      if (timed) {
        auto& [ms, count] = result.ms_by_op[std::string(ir::op_name(node.op)) + (state == NodeState::Folded ? "(folded)" : "")];
        ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ++count;
      }
    }
    result.states.push_back(state);
  }
  return result;
}

}  // namespace lockstep::dynamic
