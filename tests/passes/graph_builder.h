// Hand-built IR graphs for pass tests: shapes are set by hand (no shape inference needed).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace lockstep::testing {

class GraphBuilder {
 public:
  ir::ValueId input(const std::string& name, Shape shape, DType dtype = DType::Float32) {
    ir::ValueId id = value(name, std::move(shape), dtype);
    graph_.inputs.push_back(id);
    return id;
  }
  ir::ValueId constant(const std::string& name, Tensor tensor) {
    ir::Value v;
    v.name = name;
    v.dtype = tensor.dtype();
    v.shape = tensor.shape();
    v.constant = std::move(tensor);
    return graph_.add_value(std::move(v));
  }
  ir::ValueId filled(const std::string& name, Shape shape, float fill) {
    std::vector<float> data(static_cast<size_t>(num_elements(shape)), fill);
    return constant(name, Tensor::from_vector<float>(std::move(shape), data));
  }
  ir::ValueId ints(const std::string& name, std::vector<int64_t> data) {
    Shape shape{static_cast<int64_t>(data.size())};
    return constant(name, Tensor::from_vector<int64_t>(shape, data));
  }
  // Adds a node with one output `name`:shape and returns the output id.
  ir::ValueId node(ir::Op op, const std::string& name, std::vector<ir::ValueId> inputs, Shape shape,
                   DType dtype = DType::Float32, ir::Attributes attrs = {}) {
    return nodes(op, name, std::move(inputs), {{name, std::move(shape)}}, dtype, std::move(attrs))[0];
  }
  std::vector<ir::ValueId> nodes(ir::Op op, const std::string& name, std::vector<ir::ValueId> inputs,
                                 std::vector<std::pair<std::string, Shape>> outputs, DType dtype = DType::Float32,
                                 ir::Attributes attrs = {}) {
    ir::Node n;
    n.op = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    for (auto& [out_name, shape] : outputs) n.outputs.push_back(value(out_name, std::move(shape), dtype));
    graph_.nodes.push_back(std::move(n));
    return graph_.nodes.back().outputs;
  }
  void output(ir::ValueId id) { graph_.outputs.push_back(id); }
  ir::Graph& graph() { return graph_; }

 private:
  ir::ValueId value(const std::string& name, Shape shape, DType dtype) {
    ir::Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    return graph_.add_value(std::move(v));
  }
  ir::Graph graph_;
};

}  // namespace lockstep::testing
