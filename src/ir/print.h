// The text form of the IR, for --print-after-all and debugging (tests/ir/print_test.cpp).
#pragma once

#include <iosfwd>
#include <string>

#include "ir/graph.h"

namespace lockstep::ir {

// One line per input, node and output. A node line reads:
//   #3 %12 'h':f32[1,72,1024] = Conv(%0 'x', %4 'w') {group=1} epilogue[Add(acc, %7 'b') 'add0'] onnx 'conv0'
void print(const Graph& graph, std::ostream& out);
std::string to_string(const Graph& graph);

}  // namespace lockstep::ir
