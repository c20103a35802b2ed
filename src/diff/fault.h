// Test-only fault injection (issue 4 item 7). Nothing in the CLI or a normal run reaches this:
// the diff API accepts a FaultSpec for the TESTED backend so that tests can plant a numeric
// fault at one kernel boundary and check that bisection finds it.
#pragma once

#include <string>

#include "ir/graph.h"
#include "lockstep/lockstep.h"

namespace lockstep::diff {

enum class FaultKind { Scale, Offset, NaN, Stale };

struct FaultSpec {
  std::string node;                  // ONNX name of the kernel boundary (Node::result_onnx_name())
  FaultKind kind = FaultKind::Scale;
  double amount = 2.0;               // Scale: factor; Offset: added value; NaN, Stale: unused
  int output_index = 0;              // which output of that kernel is altered
  Tensor stale;                      // Stale: the values the output keeps (undefined: zeros)
};

const char* fault_kind_name(FaultKind kind);

// A FaultFn for RunOptions.fault_for_testing that alters output `output_index` of the kernel whose
// result is `spec.node` (NaN: element 0 becomes NaN; Stale: the whole buffer is replaced).
FaultFn make_fault(const FaultSpec& spec);

// Test-only graph corruption for bisect-passes tests (PipelineOptions::fault): scales by
// (1 + amount) the largest floating constant read by the node that produces the first graph
// output or, walking up through its first input, the nearest node that reads one. The constant
// gets a fresh buffer (graph copies share constant storage). False when no such constant exists.
bool corrupt_graph_for_testing(ir::Graph& graph, double amount = 0.5);

}  // namespace lockstep::diff
