#include "backends/cpu/backend.h"

#include "backends/cpu/executor.h"
#include "ir/graph.h"

namespace lockstep::cpu {

namespace {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  bool available(std::string*) const override { return true; }

  std::optional<std::string> unsupported_reason(const ir::Graph& graph, const ir::Node& node) const override {
    if (ir::has_data_dependent_shape(node.op))  // a constant input was folded before this
      return std::string("data-dependent output shape: runs in the run-time shape stage");
    auto check = [&](ir::ValueId id) -> std::optional<std::string> {
      if (id == ir::kNoValue) return std::nullopt;
      const ir::Value& v = graph.value(id);
      if (v.dtype == DType::Float64)
        return "value '" + v.name + "' is float64; the cpu backend computes in float32 only (use the reference)";
      if (!v.shape_known()) return "value '" + v.name + "' has no static shape";
      return std::nullopt;
    };
    for (ir::ValueId id : node.inputs)
      if (auto r = check(id)) return r;
    for (ir::ValueId id : node.outputs)
      if (auto r = check(id)) return r;
    for (const auto& step : node.epilogue)
      if (auto r = check(step.operand)) return r;
    if (node.op == ir::Op::Cast && node.attrs.get_int("to", 1) == 11)
      return std::string("Cast to float64; the cpu backend computes in float32 only (use the reference)");
    return std::nullopt;
  }

  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options& options) const override {
    return make_executable(graph, options);
  }
};

}  // namespace

const Backend& backend() {
  static const CpuBackend instance;
  return instance;
}

}  // namespace lockstep::cpu
