// Discrete decisions: where two runs part on a value that is a choice rather than a measurement
// (an integer or bool tensor, a Ceil or Floor), e.g. a float32 rounding that flips a duration's
// Ceil and changes the audio's length. Then a cosine over tensors of different lengths means
// nothing; this names the first node whose shape or decision differs, the element, and both
// sides' input values there.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::diff {

// True for the nodes whose outputs are decisions: integer/bool outputs, Ceil, Floor.
bool is_deciding_node(const ir::Graph& graph, const ir::Node& node);

// Records, by value name, the outputs of deciding nodes and the inputs they read, from a run's
// taps. `graph` names the values (the model's graph: every backend keeps its value ids).
class DiscreteCapture {
 public:
  explicit DiscreteCapture(const ir::Graph& graph);
  TapFn tap();
  const Tensor* find(const std::string& value_name) const;

 private:
  const ir::Graph& graph_;
  std::vector<char> wanted_;  // per ValueId
  std::map<std::string, Tensor> values_;
};

struct DiscreteDivergence {
  std::string node, op, value;       // the ONNX node, its op, the output that differs
  Shape ref_shape, test_shape;
  std::vector<int64_t> index;        // the first differing element (empty when shapes differ)
  double ref_value = 0, test_value = 0;
  struct Input {
    std::string name;
    double ref = 0, test = 0;
  };
  std::vector<Input> inputs;  // the node's inputs at that element, where both sides have them
  // "Ceil at /dp/Ceil [0,37]: 3 vs 2 (input '/dp/Mul_output_0': 2.0000002 vs 1.9999998)"
  std::string message() const;
};

// The first deciding node, in graph order, whose output shape or values differ between the runs.
std::optional<DiscreteDivergence> first_discrete_divergence(const ir::Graph& graph, const DiscreteCapture& ref,
                                                             const DiscreteCapture& test);

}  // namespace lockstep::diff
