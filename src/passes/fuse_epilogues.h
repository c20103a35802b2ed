// Epilogue fusion of elementwise chains (tests/passes/fuse_epilogues_test.cpp).
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"

namespace lockstep::passes {

// Folds an elementwise node (Add, Sub, Mul, Div, Pow, Tanh, Sigmoid, Relu, LeakyRelu, Exp, Neg,
// Sqrt) into the epilogue of the producer of its input when the producer is a single-output Conv,
// ConvTranspose, MatMul, Gemm or fusable elementwise node, the intermediate value has that one
// reader and is no graph output, a binary node's other operand is a constant, a graph input or a
// value produced before the producer, it broadcasts to the producer's output shape and all is
// floating, and the intermediate is not the value of an ONNX node named in options().observe.
// The producer's outputs[0] becomes the consumer's output. One application per step.
void fuse_epilogues(ir::Graph& graph, PassContext& ctx);

}  // namespace lockstep::passes
