// The reference interpreter as a Backend ("reference"): always available, runs every op.
#include "reference/evaluate.h"

#include <mutex>

namespace lockstep::reference {

namespace {

// Count → MissingInput, dtype → DTypeMismatch, shape → ShapeMismatch, each naming the input.
// Any floating dtype is accepted for a floating input: the reference computes in double anyway.
void check_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  if (inputs.size() < graph.inputs.size())
    throw Error(ErrorCode::MissingInput,
                "input '" + graph.value(graph.inputs[inputs.size()]).name + "' was not provided (" +
                    std::to_string(graph.inputs.size()) + " inputs expected, " +
                    std::to_string(inputs.size()) + " given)");
  if (inputs.size() > graph.inputs.size())
    throw Error(ErrorCode::InvalidArgument, std::to_string(inputs.size()) +
                                                " inputs given, the graph has " +
                                                std::to_string(graph.inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.inputs[i]);
    const Tensor& t = inputs[i];
    if (!t.defined()) throw Error(ErrorCode::MissingInput, "input '" + v.name + "' is empty");
    bool dtype_ok = t.dtype() == v.dtype || (is_floating(t.dtype()) && is_floating(v.dtype));
    if (!dtype_ok)
      throw Error(ErrorCode::DTypeMismatch, "input '" + v.name + "' expects " +
                                                dtype_name(v.dtype) + ", given " +
                                                dtype_name(t.dtype()));
    bool shape_ok = t.shape().size() == v.shape.size();
    for (size_t d = 0; shape_ok && d < v.shape.size(); ++d)
      shape_ok = v.shape[d] < 0 || v.shape[d] == t.shape()[d];
    if (!shape_ok)
      throw Error(ErrorCode::ShapeMismatch, "input '" + v.name + "' expects shape " +
                                                shape_str(v.shape) + ", given " +
                                                shape_str(t.shape()));
  }
}

class ReferenceExecutable : public Executable {
 public:
  explicit ReferenceExecutable(ir::Graph graph) : graph_(std::move(graph)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunOptions& options) override {
    check_inputs(graph_, inputs);
    std::lock_guard<std::mutex> lock(run_mutex_);  // one run at a time, as every backend (docs/security.md)
    return evaluate(graph_, inputs, options.tap, options.seed, options.fault_for_testing);
  }
  const ir::Graph& graph() const override { return graph_; }
  std::string backend_name() const override { return "reference"; }

 private:
  ir::Graph graph_;
  std::mutex run_mutex_;
};

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }
  bool available(std::string*) const override { return true; }
  std::optional<std::string> unsupported_reason(const ir::Graph&, const ir::Node&) const override {
    return std::nullopt;
  }
  std::unique_ptr<Executable> compile(const ir::Graph& graph, const Options&) const override {
    return std::make_unique<ReferenceExecutable>(graph);
  }
};

}  // namespace

const Backend& backend() {
  static const ReferenceBackend instance;
  return instance;
}

}  // namespace lockstep::reference
