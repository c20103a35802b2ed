// Shared scaffolding of the cpu backend's graph-level tests: a small hand-built ir::Graph
// builder, and checks that run a graph on cpu at given thread counts against the float64
// reference (outputs or every tap) with the caller's named bounds, and compare bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lockstep/tensor.h"

namespace lockstep::test {

// Adds values and builds nodes on a graph the caller owns (values get no dtype: Float32).
class GraphBuilder {
 public:
  explicit GraphBuilder(ir::Graph& g) : g_(g) {}

  // A value; a defined `constant` makes it a constant (weights, parameters).
  ir::ValueId value(std::string name, Shape shape, Tensor constant = {});
  // A 1-D int64 constant (Slice starts/ends/axes, Split sizes, ...).
  ir::ValueId ints(const std::string& name, std::vector<int64_t> v);

  // Appends a Conv `name` with pads {1, 1} (a k = 3 conv keeps the length: the channels-last
  // neighbour of the conv under test); returns its new output value of `out_shape`.
  ir::ValueId append_pad1_conv(const std::string& name, ir::ValueId input, ir::ValueId weight,
                               Shape out_shape);

  static ir::Node node(ir::Op op, std::string name, std::vector<ir::ValueId> inputs,
                       ir::ValueId output);
  static ir::Node node(ir::Op op, std::string name, std::vector<ir::ValueId> inputs,
                       std::vector<ir::ValueId> outputs);

 private:
  ir::Graph& g_;
};

// Same byte size and identical bytes for every tensor.
bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

// Compiles `g` on cpu at `threads`, runs it once and checks the outputs against `want` (the
// float64 reference's) with the cpu bounds (kCpuRelL2, kCpuAbsPerTerm scaled by `terms`);
// with `run_to_run`, a second run must give the same bits. Returns the first run's outputs.
std::vector<Tensor> expect_cpu_matches(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& want, int threads, int64_t terms,
                                       const std::string& what, bool run_to_run);

struct TapCheck {
  std::vector<int> threads;  // cpu thread counts, each compiled afresh
  double rel_l2;             // the caller's named bound per tapped value
  bool recompile = false;    // also: a second compilation gives the same output bits
  std::string what;          // prefix for failure messages
};

// At each thread count: every tap (keyed by node name and output index) is finite where the
// reference tap is and within `rel_l2` of it, every node output is tapped, and the tapped run's
// outputs have the same bits as an untapped run's (and a recompiled one's with `recompile`).
void expect_cpu_taps_match_reference(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                     const TapCheck& check);

}  // namespace lockstep::test
