#include "diff/fault.h"

#include <cstring>
#include <limits>

namespace lockstep::diff {

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::Scale: return "scale";
    case FaultKind::Offset: return "offset";
    case FaultKind::NaN: return "nan";
    case FaultKind::Stale: return "stale";
  }
  return "?";
}

namespace {

template <class T>
void alter(Tensor& t, const FaultSpec& spec) {
  T* p = t.data<T>();
  const int64_t n = t.numel();
  switch (spec.kind) {
    case FaultKind::Scale:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] * spec.amount);
      break;
    case FaultKind::Offset:
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] + spec.amount);
      break;
    case FaultKind::NaN:
      if constexpr (std::is_floating_point_v<T>)
        if (n > 0) p[0] = std::numeric_limits<T>::quiet_NaN();
      break;
    case FaultKind::Stale:
      break;  // handled by the caller
  }
}

}  // namespace

FaultFn make_fault(const FaultSpec& spec) {
  if (spec.node.empty()) throw Error(ErrorCode::InvalidArgument, "fault: no node name given");
  return [spec](const ir::Node& node, int output_index, Tensor& value) {
    if (output_index != spec.output_index || node.result_onnx_name() != spec.node) return;
    if (spec.kind == FaultKind::Stale) {
      if (!spec.stale.defined()) {
        std::memset(value.raw(), 0, value.nbytes());
        return;
      }
      if (spec.stale.numel() != value.numel())
        throw Error(ErrorCode::InvalidArgument, "stale fault: the stale tensor has " +
                                                    std::to_string(spec.stale.numel()) + " elements, the output " +
                                                    std::to_string(value.numel()),
                    spec.node);
      Tensor stale = spec.stale.dtype() == value.dtype() ? spec.stale : spec.stale.to(value.dtype());
      std::memcpy(value.raw(), stale.raw(), value.nbytes());
      return;
    }
    switch (value.dtype()) {
      case DType::Float32: alter<float>(value, spec); break;
      case DType::Float64: alter<double>(value, spec); break;
      case DType::Int64: alter<int64_t>(value, spec); break;
      case DType::Int32: alter<int32_t>(value, spec); break;
      case DType::Bool: break;  // a bool output has no numeric fault
    }
  };
}

bool corrupt_graph_for_testing(ir::Graph& graph, double amount) {
  if (graph.outputs.empty()) return false;
  std::vector<int> producer = graph.producers();
  int n = producer.at(static_cast<size_t>(graph.outputs[0]));
  while (n >= 0) {
    const ir::Node& node = graph.nodes[static_cast<size_t>(n)];
    ir::ValueId best = ir::kNoValue;
    auto consider = [&](ir::ValueId id) {
      if (!graph.is_constant(id)) return;
      const Tensor& c = graph.value(id).constant;
      if (!is_floating(c.dtype()) || c.numel() < 2) return;
      if (best == ir::kNoValue || c.numel() > graph.value(best).constant.numel()) best = id;
    };
    for (ir::ValueId in : node.inputs) consider(in);
    for (const auto& step : node.epilogue) consider(step.operand);
    if (best != ir::kNoValue) {
      Tensor scaled = graph.value(best).constant.to(DType::Float64);
      double* p = scaled.data<double>();
      for (int64_t i = 0; i < scaled.numel(); ++i) p[i] *= 1.0 + amount;
      graph.value(best).constant = scaled.to(graph.value(best).constant.dtype());
      return true;
    }
    ir::ValueId up = ir::kNoValue;
    for (ir::ValueId in : node.inputs)
      if (in != ir::kNoValue && !graph.is_constant(in)) {
        up = in;
        break;
      }
    n = up == ir::kNoValue ? -1 : producer.at(static_cast<size_t>(up));
  }
  return false;
}

}  // namespace lockstep::diff
