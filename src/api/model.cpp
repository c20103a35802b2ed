#include "ir/graph.h"
#include "lockstep/lockstep.h"
#include "onnx/import.h"

namespace lockstep {

Model Model::load(const std::string& path) {
  Model m;
  m.graph_ = std::make_shared<const ir::Graph>(onnx::import_model(path));
  return m;
}

Model Model::from_graph(ir::Graph graph) {
  Model m;
  m.graph_ = std::make_shared<const ir::Graph>(std::move(graph));
  return m;
}

}  // namespace lockstep
